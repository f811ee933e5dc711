import Testing

@testable import PinwheelCore

@Suite("JSON writer")
struct JSONWriterTests {
    func written(_ d: Double) -> String {
        var w = JSONWriter()
        w.number(d)
        return w.text
    }

    @Test("doubles are written in their shortest form and read back bit for bit")
    func shortestRoundTrip() throws {
        #expect(written(48.85) == "48.85")
        #expect(written(0.05) == "0.05")
        #expect(written(-0.000123) == "-0.000123")
        #expect(written(2) == "2")
        #expect(written(-0.0) == "-0")
        #expect(written(1e22) == "1e+22")
        #expect(written(Double.leastNonzeroMagnitude) == "5e-324")
        #expect(written(0.1 + 0.2) == "0.30000000000000004")
        #expect(written(.nan) == "null" && written(.infinity) == "null")
        var rng = SeededRandom(seed: 7)
        for k in 0..<50_000 {
            let d: Double =
                switch k % 3 {
                case 0: Double(bitPattern: rng.next())
                case 1: (Double(rng.next() % 36_000_000) - 18_000_000) / 100_000  // five-decimal coordinates
                default: Double.random(in: -180...180, using: &rng)
                }
            guard d.isFinite else { continue }
            let text = written(d)
            let back = try JSONReader.parse(text)
            #expect(back == .number(d), "\(d) written as \(text)")
            #expect(text.count <= d.description.count, "\(text) longer than \(d.description)")
        }
    }

    @Test("positions are written to 7 decimals without trailing zeros, and read back as writtenAsJSON says")
    func positions() throws {
        func position(_ lat: Double, _ lon: Double) -> String {
            var encoder = MessageEncoder()
            encoder.position(Coordinate(lat: lat, lon: lon))
            return encoder.writer.text
        }
        #expect(position(48.85, 2) == #""lat":48.85,"lon":2"#)
        #expect(position(48.856_612_345_678, -33.868_820_4) == #""lat":48.8566123,"lon":-33.8688204"#)
        #expect(position(-0.000_000_04, 179.999_999_999_999_97) == #""lat":0,"lon":180"#)
        #expect(position(-0.000_000_06, -0.000_000_05) == #""lat":-0.0000001,"lon":0"#, "halves up, as the digest")
        var rng = SeededRandom(seed: 11)
        for k in 0..<50_000 {
            let c =
                k % 2 == 0
                ? Coordinate(
                    lat: (Double(rng.next() % 18_000_000) - 9_000_000) / 100_000,
                    lon: (Double(rng.next() % 36_000_000) - 18_000_000) / 100_000)  // five decimals
                : Coordinate(lat: .random(in: -90...90, using: &rng), lon: .random(in: -180...180, using: &rng))
            let text = position(c.lat, c.lon)
            let back = try JSONReader.parse("{\(text)}")
            #expect(
                back
                    == .object(
                        JSONObject(members: ["lat": .number(c.writtenAsJSON.lat), "lon": .number(c.writtenAsJSON.lon)])),
                "\(text)")
            #expect(
                abs(c.writtenAsJSON.lat - c.lat) <= 0.5e-7 * (1 + 1e-9)
                    && abs(c.writtenAsJSON.lon - c.lon) <= 0.5e-7 * (1 + 1e-9))
            if k % 2 == 0 { #expect(c.writtenAsJSON == c, "five decimals are written exactly: \(text)") }
            let numbers = text.split(separator: ",").map { $0.split(separator: ":")[1] }
            #expect(numbers.allSatisfy { !($0.contains(".") && $0.hasSuffix("0")) } && text.count <= 36, "\(text)")
        }
    }

    @Test("integers cover the whole unsigned range")
    func integers() {
        var w = JSONWriter()
        w.integer(UInt64.max)
        w.byte(UInt8(ascii: " "))
        w.integer(0 as UInt64)
        w.byte(UInt8(ascii: " "))
        w.integer(-42)
        #expect(w.text == "18446744073709551615 0 -42")
    }

    @Test("strings escape quotes, backslashes and control characters and keep other UTF-8")
    func escaping() throws {
        let s = "a\"b\\c\n\r\t\u{8}\u{C}\u{1}\u{1F} é 😀 </script>"
        var w = JSONWriter()
        w.string(s)
        #expect(w.text == #""a\"b\\c\n\r\t\b\f\u0001\u001f é 😀 </script>""#)
        #expect(try JSONReader.parse(w.text) == .string(s))
    }
}
