/// A strict JSON parser over raw UTF-8 bytes (RFC 8259), plus `NaN`/`Infinity` literals, with a
/// nesting limit so hostile input cannot exhaust the stack.
public struct JSONReader {
    /// Why a text is not JSON, and where.
    public struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// Byte offset of the problem.
        public var offset: Int
        /// 1-based line and column (in bytes) of the problem.
        public var line: Int
        public var column: Int
        /// What is wrong, e.g. "expected ':' after an object key".
        public var reason: String

        public var description: String { "\(reason) at line \(line), column \(column)" }
    }

    /// Deepest nesting of arrays and objects accepted.
    public static let maxDepth = 128

    /// Parses one JSON value that must fill the whole text (whitespace around it allowed).
    /// - Parameter bytes: UTF-8 text.
    /// - Returns: the value.
    public static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws(Failure) -> JSONValue {
        var reader = Cursor(bytes: bytes)
        reader.skipSpace()
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        if reader.i < bytes.count { throw reader.failure("unexpected text after the JSON value") }
        return value
    }

    /// Parses JSON from any contiguous bytes.
    public static func parse(_ bytes: [UInt8]) throws(Failure) -> JSONValue {
        let result: Result<JSONValue, Failure> = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(Failure) in try parse(buffer) }
        }
        return try result.get()
    }

    /// Parses JSON held in a string.
    public static func parse(_ text: String) throws(Failure) -> JSONValue {
        try parse(Array(text.utf8))
    }

    struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0
        var scratch: [UInt8] = []

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        func failure(_ reason: String, at offset: Int? = nil) -> Failure {
            let at = min(offset ?? i, bytes.count)
            var line = 1
            var lineStart = 0
            for k in 0..<at where bytes[k] == UInt8(ascii: "\n") {
                line += 1
                lineStart = k + 1
            }
            return Failure(offset: at, line: line, column: at - lineStart + 1, reason: reason)
        }

        mutating func skipSpace() {
            while i < bytes.count {
                switch bytes[i] {
                case 0x20, 0x0A, 0x0D, 0x09: i += 1
                default: return
                }
            }
        }

        func describeHere() -> String {
            guard i < bytes.count else { return "end of input" }
            let c = bytes[i]
            return c >= 0x20 && c < 0x7F ? "'\(Character(Unicode.Scalar(c)))'" : "byte 0x\(String(c, radix: 16))"
        }

        mutating func value(depth: Int) throws(Failure) -> JSONValue {
            guard i < bytes.count else { throw failure("unexpected end of input, expected a value") }
            switch bytes[i] {
            case UInt8(ascii: "{"): return .object(try object(depth: depth + 1))
            case UInt8(ascii: "["): return .array(try array(depth: depth + 1))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"):
                try literal("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try literal("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try literal("null")
                return .null
            case UInt8(ascii: "N"):
                try literal("NaN")
                return .number(.nan)
            case UInt8(ascii: "I"):
                try literal("Infinity")
                return .number(.infinity)
            case UInt8(ascii: "-") where i + 1 < bytes.count && bytes[i + 1] == UInt8(ascii: "I"):
                i += 1
                try literal("Infinity")
                return .number(-.infinity)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw failure("unexpected \(describeHere()), expected a value")
            }
        }

        mutating func literal(_ word: StaticString) throws(Failure) {
            let start = i
            let n = word.utf8CodeUnitCount
            guard i + n <= bytes.count else { throw failure("unexpected \(describeHere()), expected a value") }
            let w = word.utf8Start
            for k in 0..<n where bytes[i + k] != w[k] {
                throw failure("unexpected \(describeHere()), expected a value", at: start)
            }
            i += n
        }

        mutating func object(depth: Int) throws(Failure) -> JSONObject {
            if depth > JSONReader.maxDepth { throw failure("nesting deeper than \(JSONReader.maxDepth)") }
            let start = i
            i += 1
            var members: [String: JSONValue] = [:]
            skipSpace()
            if i < bytes.count && bytes[i] == UInt8(ascii: "}") {
                i += 1
                return JSONObject(members: members, offset: start)
            }
            while true {
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else {
                    throw failure("unexpected \(describeHere()), expected a string key")
                }
                let key = try string()
                skipSpace()
                guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else {
                    throw failure("unexpected \(describeHere()), expected ':' after key \"\(key)\"")
                }
                i += 1
                skipSpace()
                members[key] = try value(depth: depth)
                skipSpace()
                guard i < bytes.count else { throw failure("unexpected end of input inside an object") }
                if bytes[i] == UInt8(ascii: ",") {
                    i += 1
                } else if bytes[i] == UInt8(ascii: "}") {
                    i += 1
                    return JSONObject(members: members, offset: start)
                } else {
                    throw failure("unexpected \(describeHere()), expected ',' or '}'")
                }
            }
        }

        mutating func array(depth: Int) throws(Failure) -> [JSONValue] {
            if depth > JSONReader.maxDepth { throw failure("nesting deeper than \(JSONReader.maxDepth)") }
            i += 1
            var elements: [JSONValue] = []
            skipSpace()
            if i < bytes.count && bytes[i] == UInt8(ascii: "]") {
                i += 1
                return elements
            }
            while true {
                skipSpace()
                elements.append(try value(depth: depth))
                skipSpace()
                guard i < bytes.count else { throw failure("unexpected end of input inside an array") }
                if bytes[i] == UInt8(ascii: ",") {
                    i += 1
                } else if bytes[i] == UInt8(ascii: "]") {
                    i += 1
                    return elements
                } else {
                    throw failure("unexpected \(describeHere()), expected ',' or ']'")
                }
            }
        }

        /// Scans the JSON number grammar, then converts the span.
        mutating func number() throws(Failure) -> Double {
            let start = i
            if bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, DoubleParser.digit(bytes[i]) != nil else {
                throw failure("malformed number, expected a digit")
            }
            if bytes[i] == UInt8(ascii: "0") {
                i += 1
                if i < bytes.count && DoubleParser.digit(bytes[i]) != nil {
                    throw failure("malformed number, leading zeros are not allowed", at: start)
                }
            } else {
                while i < bytes.count && DoubleParser.digit(bytes[i]) != nil { i += 1 }
            }
            if i < bytes.count && bytes[i] == UInt8(ascii: ".") {
                i += 1
                guard i < bytes.count, DoubleParser.digit(bytes[i]) != nil else {
                    throw failure("malformed number, expected a digit after '.'")
                }
                while i < bytes.count && DoubleParser.digit(bytes[i]) != nil { i += 1 }
            }
            if i < bytes.count && (bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E")) {
                i += 1
                if i < bytes.count && (bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-")) { i += 1 }
                guard i < bytes.count, DoubleParser.digit(bytes[i]) != nil else {
                    throw failure("malformed number, expected a digit in the exponent")
                }
                while i < bytes.count && DoubleParser.digit(bytes[i]) != nil { i += 1 }
            }
            guard let value = DoubleParser.parse(UnsafeBufferPointer(rebasing: bytes[start..<i])) else {
                throw failure("malformed number", at: start)
            }
            return value
        }

        /// Reads a string; the cursor is on the opening quote.
        mutating func string() throws(Failure) -> String {
            let start = i
            i += 1
            let contentStart = i
            // Fast path: no escapes, so the bytes are the string.
            while i < bytes.count {
                let c = bytes[i]
                if c == UInt8(ascii: "\"") {
                    let span = UnsafeBufferPointer(rebasing: bytes[contentStart..<i])
                    i += 1
                    guard let s = UTF8Text.string(span) else {
                        throw failure("invalid UTF-8 in a string", at: start)
                    }
                    return s
                }
                if c == UInt8(ascii: "\\") { break }
                if c < 0x20 { throw failure("unescaped control character in a string") }
                i += 1
            }
            guard i < bytes.count else { throw failure("unterminated string", at: start) }
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[contentStart..<i]))
            while i < bytes.count {
                let c = bytes[i]
                if c == UInt8(ascii: "\"") {
                    i += 1
                    guard let s = UTF8Text.string(scratch) else {
                        throw failure("invalid UTF-8 in a string", at: start)
                    }
                    return s
                }
                if c < 0x20 { throw failure("unescaped control character in a string") }
                if c != UInt8(ascii: "\\") {
                    scratch.append(c)
                    i += 1
                    continue
                }
                i += 1
                guard i < bytes.count else { break }
                let e = bytes[i]
                i += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(e)
                case UInt8(ascii: "b"): scratch.append(0x08)
                case UInt8(ascii: "f"): scratch.append(0x0C)
                case UInt8(ascii: "n"): scratch.append(0x0A)
                case UInt8(ascii: "r"): scratch.append(0x0D)
                case UInt8(ascii: "t"): scratch.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if scalar >= 0xD800 && scalar < 0xDC00 {
                        guard i + 1 < bytes.count, bytes[i] == UInt8(ascii: "\\"), bytes[i + 1] == UInt8(ascii: "u")
                        else { throw failure("unpaired surrogate in a \\u escape") }
                        i += 2
                        let low = try hex4()
                        guard low >= 0xDC00 && low < 0xE000 else { throw failure("unpaired surrogate in a \\u escape") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if scalar >= 0xDC00 && scalar < 0xE000 {
                        throw failure("unpaired surrogate in a \\u escape")
                    }
                    scratch.append(contentsOf: Unicode.Scalar(scalar)!.utf8)
                default:
                    throw failure("invalid escape '\\\(Character(Unicode.Scalar(e)))' in a string", at: i - 2)
                }
            }
            throw failure("unterminated string", at: start)
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            guard i + 4 <= bytes.count else { throw failure("truncated \\u escape") }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = bytes[i]
                let d: UInt32
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
                default: throw failure("invalid hex digit in a \\u escape")
                }
                v = v << 4 | d
                i += 1
            }
            return v
        }
    }
}
