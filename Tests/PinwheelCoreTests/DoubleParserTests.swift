import Testing

@testable import PinwheelCore

@Suite("Double parser")
struct DoubleParserTests {
    @Test("agrees with the standard library on random decimal text, bit for bit")
    func agreesWithStandardLibrary() {
        var rng = SeededRandom(seed: 1)
        for _ in 0..<20_000 {
            let d = Double(bitPattern: rng.next())
            guard d.isFinite else { continue }
            let texts = [
                d.description, String(format6: d), String(Int64(truncatingIfNeeded: rng.next()) % 1_000_000_000),
            ]
            for t in texts {
                #expect(DoubleParser.parse(t)?.bitPattern == Double(t)?.bitPattern, "\(t)")
            }
        }
    }

    @Test("accepts leading dots, trailing dots, signs and exponents; rejects everything else")
    func syntax() {
        #expect(DoubleParser.parse(".5") == 0.5)
        #expect(DoubleParser.parse("5.") == 5)
        #expect(DoubleParser.parse("+1e2") == 100)
        #expect(DoubleParser.parse("-0")?.sign == .minus)
        #expect(DoubleParser.parse("1e400") == .infinity)
        #expect(DoubleParser.parse("1e-400") == 0)
        #expect(DoubleParser.parse("0.000000000000000000000000000001") == 1e-30)
        #expect(DoubleParser.parse("123456789012345678901234567890") == 123456789012345678901234567890.0)
        for bad in ["", "-", ".", "e5", "1e", "1e+", "nan", "inf", "0x10", " 1", "1 ", "1,5", "1.2.3", "--1"] {
            #expect(DoubleParser.parse(bad) == nil, "\(bad)")
        }
    }
}

extension String {
    /// Six decimals, the way many CSV writers print coordinates.
    init(format6 d: Double) {
        let scaled = (d.magnitude.truncatingRemainder(dividingBy: 1000) * 1_000_000).rounded()
        let whole = Int(scaled / 1_000_000)
        let frac = Int(scaled.truncatingRemainder(dividingBy: 1_000_000))
        let fracText = String(frac)
        self = (d < 0 ? "-" : "") + "\(whole)." + String(repeating: "0", count: 6 - fracText.count) + fracText
    }
}
