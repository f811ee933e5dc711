/// Strings from byte spans, validated without the generic machinery of `String(validating:as:)`,
/// which looks up type metadata on every call and dominated CSV parsing.
public enum UTF8Text {
    /// The span as a string; nil when it is not well-formed UTF-8 (RFC 3629: no overlongs, no
    /// surrogates, nothing above U+10FFFF).
    static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        isValid(bytes) ? String(decoding: bytes, as: UTF8.self) : nil
    }

    /// The bytes of an array as a string; nil when they are not well-formed UTF-8.
    static func string(_ bytes: [UInt8]) -> String? {
        bytes.withUnsafeBufferPointer { string($0) }
    }

    /// True when the span is well-formed UTF-8.
    public static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let n = bytes.count
        var i = 0
        // Most text here is ASCII: eight bytes at a time while no byte has its high bit set.
        if let base = bytes.baseAddress {
            let raw = UnsafeRawPointer(base)
            while i + 8 <= n, raw.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                i += 8
            }
        }
        while i < n {
            let b = bytes[i]
            if b < 0x80 {
                i += 1
                continue
            }
            // Length of the sequence and the allowed range of its second byte.
            let length: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch b {
            case 0xC2...0xDF: length = 2
            case 0xE0:
                length = 3
                low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED:
                length = 3
                high = 0x9F  // no UTF-16 surrogates
            case 0xF0:
                length = 4
                low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4:
                length = 4
                high = 0x8F  // nothing above U+10FFFF
            default: return false
            }
            guard i + length <= n, bytes[i + 1] >= low, bytes[i + 1] <= high else { return false }
            for k in 2..<length where bytes[i + k] & 0xC0 != 0x80 { return false }
            i += length
        }
        return true
    }
}
