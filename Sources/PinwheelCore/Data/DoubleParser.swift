/// Decimal text to `Double` without allocating in the common case.
///
/// Accepts `[+-]?digits[.digits][(e|E)[+-]?digits]` (at least one mantissa digit; `.5` and `5.` are
/// fine) and nothing else: no spaces, no hex, no `inf`/`nan`. Correctly rounded: up to 15 significant
/// digits with a power of ten up to 22 are exact in binary (Clinger's fast path); anything longer
/// goes to the standard library's parser.
public enum DoubleParser {
    /// Powers of ten that are exact doubles.
    @usableFromInline static let exactPowers: [Double] = (0...22).map { (0..<$0).reduce(1.0) { a, _ in a * 10 } }

    /// Parses a whole span as a number.
    /// - Parameter text: the bytes of the number, nothing around it.
    /// - Returns: the value (possibly infinite when the exponent overflows); nil if the syntax is wrong.
    public static func parse(_ text: UnsafeBufferPointer<UInt8>) -> Double? {
        let n = text.count
        var i = 0
        guard n > 0 else { return nil }
        var negative = false
        if text[0] == UInt8(ascii: "-") || text[0] == UInt8(ascii: "+") {
            negative = text[0] == UInt8(ascii: "-")
            i = 1
        }
        var mantissa: UInt64 = 0
        var significant = 0  // digits accumulated into mantissa, leading zeros excluded
        var digits = 0  // all mantissa digits seen
        var exponent = 0  // decimal exponent adjustment from the point and dropped digits
        var exactMantissa = true
        var afterPoint = false
        while i < n {
            if text[i] == UInt8(ascii: ".") && !afterPoint {
                afterPoint = true
                i += 1
                continue
            }
            guard let d = digit(text[i]) else { break }
            digits += 1
            if significant < 19 {
                if mantissa != 0 || d != 0 {
                    mantissa = mantissa &* 10 &+ UInt64(d)
                    significant += 1
                }
                if afterPoint { exponent -= 1 }
            } else {
                // Digits past 19 only scale the value (before the point) or are dropped (after it).
                if !afterPoint { exponent += 1 }
                if d != 0 { exactMantissa = false }
            }
            i += 1
        }
        guard digits > 0 else { return nil }
        if i < n && (text[i] == UInt8(ascii: "e") || text[i] == UInt8(ascii: "E")) {
            i += 1
            var expNegative = false
            if i < n && (text[i] == UInt8(ascii: "-") || text[i] == UInt8(ascii: "+")) {
                expNegative = text[i] == UInt8(ascii: "-")
                i += 1
            }
            var e = 0
            var expDigits = 0
            while i < n, let d = digit(text[i]) {
                // Saturate: an exponent beyond a few thousand is zero or infinity either way.
                if e < 100_000 { e = e * 10 + d }
                expDigits += 1
                i += 1
            }
            guard expDigits > 0 else { return nil }
            exponent += expNegative ? -e : e
        }
        guard i == n else { return nil }
        if mantissa == 0 { return negative ? -0.0 : 0.0 }
        if exactMantissa && mantissa <= 1 << 53 && exponent >= -22 && exponent <= 22 {
            let m = Double(mantissa)
            let value = exponent < 0 ? m / exactPowers[-exponent] : m * exactPowers[exponent]
            return negative ? -value : value
        }
        return Double(String(decoding: text, as: UTF8.self))
    }

    /// Parses a number written as text, with the same rules.
    public static func parse(_ text: some StringProtocol) -> Double? {
        var s = String(text)
        return s.withUTF8 { parse($0) }
    }

    @inline(__always) static func digit(_ c: UInt8) -> Int? {
        c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") ? Int(c &- UInt8(ascii: "0")) : nil
    }
}
