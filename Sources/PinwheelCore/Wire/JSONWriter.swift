/// Appends JSON to a byte buffer the caller reuses, without building intermediate strings.
///
/// Numbers are written as the shortest decimal that reads back to the same double in the common
/// case (up to 15 significant digits), else as Swift's own shortest representation; non-finite
/// numbers, which JSON cannot hold, are written as `null`.
public struct JSONWriter: Sendable {
    /// The text written so far.
    public var bytes: [UInt8]

    /// Powers of ten that are exact doubles.
    static let powers: [Double] = (0...22).map { (0..<$0).reduce(1.0) { a, _ in a * 10 } }

    public init(capacity: Int = 4096) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Empties the buffer, keeping its capacity.
    public mutating func reset() { bytes.removeAll(keepingCapacity: true) }

    /// Appends ASCII text verbatim (punctuation, keys known to need no escaping).
    @inlinable public mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends one ASCII byte.
    @inlinable public mutating func byte(_ c: UInt8) { bytes.append(c) }

    /// Appends `"key":` for a key that needs no escaping.
    @inlinable public mutating func key(_ name: StaticString) {
        bytes.append(UInt8(ascii: "\""))
        raw(name)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func null() { raw("null") }

    public mutating func bool(_ b: Bool) { b ? raw("true") : raw("false") }

    /// Appends an unsigned integer in decimal.
    public mutating func integer(_ value: UInt64) {
        if value < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var v = value
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // up to 24 digit bytes, filled from the end
        var n = 0
        withUnsafeMutableBytes(of: &digits) { buf in
            while v > 0 {
                n += 1
                buf[24 - n] = UInt8(ascii: "0") + UInt8(v % 10)
                v /= 10
            }
            bytes.append(contentsOf: buf[(24 - n)...])
        }
    }

    /// Appends a signed integer in decimal.
    public mutating func integer(_ value: Int) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        integer(UInt64(value.magnitude))
    }

    /// Appends a double as the shortest decimal that reads back to it; `null` if not finite.
    public mutating func number(_ d: Double) {
        guard d.isFinite else { return null() }
        let magnitude = d.magnitude
        let limit = 9_007_199_254_740_992.0  // 2^53: integers below it are exact
        if d == d.rounded(.towardZero) && magnitude < limit {
            if d.sign == .minus { bytes.append(UInt8(ascii: "-")) }
            integer(UInt64(magnitude))
            return
        }
        // Smallest k with an integer m, |m| < 2^53, such that m / 10^k is exactly d; reading m·10^-k
        // back divides two exact doubles, which IEEE rounds correctly, so the text round-trips.
        if magnitude >= 1e-7 {
            for k in 1...15 {
                let scaled = magnitude * JSONWriter.powers[k]
                if scaled >= limit { break }
                let m = scaled.rounded()
                if m / JSONWriter.powers[k] == magnitude {
                    if d.sign == .minus { bytes.append(UInt8(ascii: "-")) }
                    fixedPoint(UInt64(m), fractionDigits: k)
                    return
                }
            }
        }
        // Swift prints the shortest round-trip form, e.g. "1.2345678901234567" or "1e-08", valid JSON.
        bytes.append(contentsOf: d.description.utf8)
    }

    /// Appends fixed-point degrees (1e-7°, ``BinaryGrid/fixed(_:unit:limit:)``) as a decimal without
    /// trailing zeros, e.g. 488566016 → 48.8566016.
    public mutating func fixedPointDegrees(_ q: Int64) {
        var m = q.magnitude
        var k = 7
        while k > 0 && m % 10 == 0 {
            m /= 10
            k -= 1
        }
        if q < 0 { bytes.append(UInt8(ascii: "-")) }
        if k == 0 { integer(m) } else { fixedPoint(m, fractionDigits: k) }
    }

    /// Writes m·10^-k as decimal text, e.g. (5, 2) → "0.05".
    mutating func fixedPoint(_ m: UInt64, fractionDigits k: Int) {
        let start = bytes.count
        integer(m)
        let written = bytes.count - start
        if written <= k {
            // Pad to "0.000ddd".
            let zeros = k - written + 1
            bytes.insert(contentsOf: repeatElement(UInt8(ascii: "0"), count: zeros), at: start)
        }
        bytes.insert(UInt8(ascii: "."), at: bytes.count - k)
    }

    /// Appends an array of strings.
    public mutating func strings(_ list: [String]) {
        byte(UInt8(ascii: "["))
        for (k, s) in list.enumerated() {
            if k > 0 { byte(UInt8(ascii: ",")) }
            string(s)
        }
        byte(UInt8(ascii: "]"))
    }

    /// Appends a box as `[west,south,east,north]`.
    public mutating func bbox(_ b: BBox) {
        byte(UInt8(ascii: "["))
        for (k, edge) in [b.west, b.south, b.east, b.north].enumerated() {
            if k > 0 { byte(UInt8(ascii: ",")) }
            number(edge)
        }
        byte(UInt8(ascii: "]"))
    }

    /// Appends a string in quotes, escaping `"`, `\` and control characters.
    public mutating func string(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { utf8 in
            var runStart = 0
            for (k, c) in utf8.enumerated() where c < 0x20 || c == UInt8(ascii: "\"") || c == UInt8(ascii: "\\") {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<k]))
                runStart = k + 1
                bytes.append(UInt8(ascii: "\\"))
                switch c {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(c)
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x08: bytes.append(UInt8(ascii: "b"))
                case 0x0C: bytes.append(UInt8(ascii: "f"))
                default:
                    let hex: StaticString = "0123456789abcdef"
                    raw("u00")
                    bytes.append(hex.utf8Start[Int(c >> 4)])
                    bytes.append(hex.utf8Start[Int(c & 0xF)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends any JSON value, object members in sorted key order so output is deterministic.
    public mutating func value(_ v: JSONValue) {
        switch v {
        case .null: null()
        case .bool(let b): bool(b)
        case .number(let d): number(d)
        case .string(let s): string(s)
        case .array(let elements):
            byte(UInt8(ascii: "["))
            for (k, e) in elements.enumerated() {
                if k > 0 { byte(UInt8(ascii: ",")) }
                value(e)
            }
            byte(UInt8(ascii: "]"))
        case .object(let object):
            byte(UInt8(ascii: "{"))
            for (k, key) in object.members.keys.sorted().enumerated() {
                if k > 0 { byte(UInt8(ascii: ",")) }
                string(key)
                byte(UInt8(ascii: ":"))
                value(object.members[key]!)
            }
            byte(UInt8(ascii: "}"))
        }
    }

    /// The text written so far, as a string.
    public var text: String { String(decoding: bytes, as: UTF8.self) }
}
