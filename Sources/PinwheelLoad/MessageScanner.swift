import PinwheelCore

/// Reads what the load client measures from a server message — type, seq, batch number, done,
/// removed ids, and each added or updated feature's id and encoded size — straight from the bytes,
/// without building JSON values: thousands of clients receive tens of thousands of batches a
/// second, and a full parse per feature would cost the load tool more CPU than the server it tests.
///
/// The scanner reuses its buffers; read its fields after `scan` and before the next call.
struct MessageScanner {
    enum Kind: Equatable {
        case batch, hello, presence, error, other
    }

    private(set) var kind = Kind.other
    private(set) var seq = -1
    private(set) var batch = -1
    private(set) var done = false
    /// A batch's data version.
    private(set) var version: UInt64 = 0
    /// Ids in `remove`.
    private(set) var removed: [UInt64] = []
    /// Features of `add` then `update`: id and the byte length of the feature's JSON object.
    private(set) var features: [(id: UInt64, bytes: Int)] = []
    private(set) var addCount = 0
    private(set) var updateCount = 0
    /// The `code` of an `error` message.
    private(set) var errorCode = ""
    /// The whole batch a binary frame held (binary frames are decoded whole anyway).
    private(set) var batchMessage: BatchMessage?

    /// Reads one binary frame (`pinwheel.v1+bin`) with the connection's decoder: only batches count
    /// (kind `.other` for an expansion). Its bytes are shared evenly by the markers it carries, as a
    /// feature's size in a delta-coded frame depends on the features before it.
    /// - Returns: false when the frame does not decode.
    mutating func scan(binary bytes: UnsafeBufferPointer<UInt8>, decoder: inout BinaryDecoder) -> Bool {
        kind = .other
        removed.removeAll(keepingCapacity: true)
        features.removeAll(keepingCapacity: true)
        addCount = 0
        updateCount = 0
        errorCode = ""
        batchMessage = nil
        guard let message = try? decoder.decode(bytes) else { return false }
        guard case .batch(let b) = message else { return true }
        kind = .batch
        batchMessage = b
        seq = Int(b.seq)
        batch = Int(b.batch)
        done = b.done
        version = b.version
        removed.append(contentsOf: b.remove)
        let share = bytes.count / max(1, b.remove.count + b.add.count + b.update.count)
        for f in b.add { features.append((f.id, share)) }
        for f in b.update { features.append((f.id, share)) }
        addCount = b.add.count
        updateCount = b.update.count
        return true
    }

    /// Scans one message.
    /// - Returns: false when the text is not an object this scanner can read (the caller counts it as an error).
    mutating func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        kind = .other
        seq = -1
        batch = -1
        done = false
        version = 0
        removed.removeAll(keepingCapacity: true)
        features.removeAll(keepingCapacity: true)
        addCount = 0
        updateCount = 0
        errorCode = ""
        var cursor = Cursor(bytes: bytes)
        return scanTop(&cursor)
    }

    private mutating func scanTop(_ c: inout Cursor) -> Bool {
        guard c.take(UInt8(ascii: "{")) else { return false }
        if c.take(UInt8(ascii: "}")) { return true }
        while true {
            guard let key = c.string() else { return false }
            guard c.take(UInt8(ascii: ":")) else { return false }
            let ok: Bool
            if c.equals(key, "type") {
                guard let value = c.string() else { return false }
                kind =
                    c.equals(value, "batch")
                    ? .batch
                    : c.equals(value, "hello")
                        ? .hello : c.equals(value, "presence") ? .presence : c.equals(value, "error") ? .error : .other
                ok = true
            } else if c.equals(key, "seq") {
                seq = c.integer().map(Int.init) ?? -1
                ok = seq >= 0
            } else if c.equals(key, "batch") {
                batch = c.integer().map(Int.init) ?? -1
                ok = batch >= 0
            } else if c.equals(key, "version") {
                guard let v = c.integer() else { return false }
                version = v
                ok = true
            } else if c.equals(key, "done") {
                guard let flag = c.boolean() else { return false }
                done = flag
                ok = true
            } else if c.equals(key, "remove") {
                ok = scanIDs(&c)
            } else if c.equals(key, "add") {
                let before = features.count
                ok = scanFeatures(&c)
                addCount = features.count - before
            } else if c.equals(key, "update") {
                let before = features.count
                ok = scanFeatures(&c)
                updateCount = features.count - before
            } else if c.equals(key, "code") {
                guard let value = c.string() else { return false }
                errorCode = String(decoding: UnsafeBufferPointer(rebasing: c.bytes[value]), as: UTF8.self)
                ok = true
            } else {
                ok = c.skipValue()
            }
            guard ok else { return false }
            if c.take(UInt8(ascii: ",")) { continue }
            return c.take(UInt8(ascii: "}"))
        }
    }

    private mutating func scanIDs(_ c: inout Cursor) -> Bool {
        guard c.take(UInt8(ascii: "[")) else { return false }
        if c.take(UInt8(ascii: "]")) { return true }
        while true {
            guard let id = c.integer() else { return false }
            removed.append(id)
            if c.take(UInt8(ascii: ",")) { continue }
            return c.take(UInt8(ascii: "]"))
        }
    }

    private mutating func scanFeatures(_ c: inout Cursor) -> Bool {
        guard c.take(UInt8(ascii: "[")) else { return false }
        if c.take(UInt8(ascii: "]")) { return true }
        while true {
            c.skipSpace()
            let start = c.i
            guard c.take(UInt8(ascii: "{")) else { return false }
            var id: UInt64?
            if !c.take(UInt8(ascii: "}")) {
                while true {
                    guard let key = c.string(), c.take(UInt8(ascii: ":")) else { return false }
                    if c.equals(key, "id") {
                        id = c.integer()
                        if id == nil { return false }
                    } else if !c.skipValue() {
                        return false
                    }
                    if c.take(UInt8(ascii: ",")) { continue }
                    guard c.take(UInt8(ascii: "}")) else { return false }
                    break
                }
            }
            guard let id else { return false }
            features.append((id, c.i - start))
            if c.take(UInt8(ascii: ",")) { continue }
            return c.take(UInt8(ascii: "]"))
        }
    }

    /// A position in the bytes with the few readers the scanner needs.
    private struct Cursor {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0

        mutating func skipSpace() {
            while i < bytes.count, bytes[i] == 0x20 || bytes[i] == 0x0A || bytes[i] == 0x0D || bytes[i] == 0x09 {
                i += 1
            }
        }

        /// Consumes `byte` (after whitespace) if it is next.
        mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard i < bytes.count, bytes[i] == byte else { return false }
            i += 1
            return true
        }

        /// Reads a string; returns the range of its raw contents (escapes left as they are).
        mutating func string() -> Range<Int>? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = i
            while i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: "\""):
                    i += 1
                    return start..<(i - 1)
                case UInt8(ascii: "\\"): i += 2
                default: i += 1
                }
            }
            return nil
        }

        /// Reads a non-negative integer.
        mutating func integer() -> UInt64? {
            skipSpace()
            var value: UInt64 = 0
            let start = i
            while i < bytes.count, bytes[i] >= UInt8(ascii: "0"), bytes[i] <= UInt8(ascii: "9") {
                let (times10, o1) = value.multipliedReportingOverflow(by: 10)
                let (sum, o2) = times10.addingReportingOverflow(UInt64(bytes[i] - UInt8(ascii: "0")))
                if o1 || o2 { return nil }
                value = sum
                i += 1
            }
            return i > start ? value : nil
        }

        mutating func boolean() -> Bool? {
            skipSpace()
            if matches("true") { return true }
            if matches("false") { return false }
            return nil
        }

        private mutating func matches(_ word: StaticString) -> Bool {
            let n = word.utf8CodeUnitCount
            guard i + n <= bytes.count else { return false }
            for k in 0..<n where bytes[i + k] != word.utf8Start[k] { return false }
            i += n
            return true
        }

        /// Skips any JSON value: strings with their escapes, nested arrays and objects, literals and numbers.
        mutating func skipValue() -> Bool {
            skipSpace()
            guard i < bytes.count else { return false }
            switch bytes[i] {
            case UInt8(ascii: "\""):
                return string() != nil
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while i < bytes.count {
                    switch bytes[i] {
                    case UInt8(ascii: "\""):
                        guard string() != nil else { return false }
                        continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 {
                            i += 1
                            return true
                        }
                    default: break
                    }
                    i += 1
                }
                return false
            default:
                let start = i
                while i < bytes.count {
                    switch bytes[i] {
                    case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x0A, 0x0D, 0x09:
                        return i > start
                    default: i += 1
                    }
                }
                return i > start
            }
        }

        /// True when the bytes in `range` are exactly `word`.
        func equals(_ range: Range<Int>, _ word: StaticString) -> Bool {
            guard range.count == word.utf8CodeUnitCount else { return false }
            for k in 0..<range.count where bytes[range.lowerBound + k] != word.utf8Start[k] { return false }
            return true
        }
    }
}
