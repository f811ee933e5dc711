/// The pieces of JSON's plain forms that the one-pass readers of the messages a server reads most
/// (``ClientMessage/decodeCommon(_:)``, ``Change/decodePlain(_:)``) are made of. Each answers nil at
/// anything else, which those readers leave to the general path and its error messages.
extension JSONReader.Cursor {
    /// Consumes `byte` if it is next.
    mutating func take(_ byte: UInt8) -> Bool {
        guard i < bytes.count, bytes[i] == byte else { return false }
        i += 1
        return true
    }

    /// Whether the bytes from `start` up to `end` are `word`.
    func equals(_ word: StaticString, from start: Int, to end: Int) -> Bool {
        guard end - start == word.utf8CodeUnitCount else { return false }
        let w = word.utf8Start
        for k in 0..<(end - start) where bytes[start + k] != w[k] { return false }
        return true
    }

    /// Consumes `word` (`true`, `null`...) if it is next.
    mutating func takeLiteral(_ word: StaticString) -> Bool {
        let end = i + word.utf8CodeUnitCount
        guard end <= bytes.count, equals(word, from: i, to: end) else { return false }
        i = end
        return true
    }

    /// Reads an object, `{"key": value, ...}` with plain keys: `member` reads each value (the cursor
    /// on it) given the positions of its key's characters, and answers false to give up.
    /// - Returns: false at any other form, or when `member` gave up.
    mutating func plainObject(_ member: (inout Self, _ key: (start: Int, end: Int)) -> Bool) -> Bool {
        skipSpace()
        guard take(UInt8(ascii: "{")) else { return false }
        skipSpace()
        if take(UInt8(ascii: "}")) { return true }
        repeat {
            skipSpace()
            guard let key = plainString() else { return false }
            skipSpace()
            guard take(UInt8(ascii: ":")) else { return false }
            skipSpace()
            guard member(&self, key) else { return false }
            skipSpace()
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "}"))
    }

    /// The key of `keys` whose name the characters at `span` are; nil for any other.
    func key<Key: PlainKey>(at span: (start: Int, end: Int), of keys: Key.Type) -> Key? {
        Key.allCases.first { equals($0.name, from: span.start, to: span.end) }
    }

    /// Whether only space is left.
    mutating func atEndAfterSpace() -> Bool {
        skipSpace()
        return i == bytes.count
    }

    /// A quoted string without escapes: the positions of its characters; nil otherwise.
    mutating func plainString() -> (start: Int, end: Int)? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = i
        while i < bytes.count, bytes[i] != UInt8(ascii: "\"") {
            if bytes[i] == UInt8(ascii: "\\") || bytes[i] < 0x20 { return nil }
            i += 1
        }
        guard i < bytes.count else { return nil }
        i += 1
        return (start, i - 1)
    }

    /// A quoted string without escapes, as a string; nil otherwise or when it is not UTF-8.
    mutating func plainText() -> String? {
        plainString().flatMap(text(at:))
    }

    /// The characters at `span` as a string; nil when they are not UTF-8.
    func text(at span: (start: Int, end: Int)) -> String? {
        UTF8Text.string(UnsafeBufferPointer(rebasing: bytes[span.start..<span.end]))
    }

    /// A JSON number (not `NaN` or `Infinity`, which the general path reads and refuses).
    mutating func plainNumber() -> Double? {
        guard i < bytes.count else { return nil }
        let b = bytes[i]
        guard b == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) else { return nil }
        return try? number()
    }
}

/// The keys a one-pass reader knows, by name.
protocol PlainKey: CaseIterable {
    var name: StaticString { get }
}
