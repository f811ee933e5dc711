/// A producer's batch of changes, one JSON object per line (the body of `POST /v1/changes`, or one
/// `pinwheel.ingest.v1` frame), read line by line: the changes that are valid, and each line that is
/// not with the reason.
public struct ChangeLines: Sendable, Equatable {
    /// A line that was not a valid change.
    public struct Rejection: Sendable, Equatable {
        /// 1-based line number in the body.
        public var line: Int
        public var error: String

        public init(line: Int, error: String) {
            self.line = line
            self.error = error
        }
    }

    /// The valid changes, in body order.
    public var changes: [Change] = []
    /// The 1-based line number of each valid change.
    public var lines: [Int] = []
    public var rejected: [Rejection] = []

    public init() {}

    /// Reads a body. Blank lines (and a final newline) are skipped; `\r\n` endings are accepted, and
    /// so is a UTF-8 byte order mark at the start, which editors on Windows write.
    public static func parse(_ body: [UInt8]) -> ChangeLines {
        var out = ChangeLines()
        body.withUnsafeBufferPointer { bytes in
            var start = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
            var line = 1
            while start < bytes.count {
                var end = start
                while end < bytes.count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
                var last = end
                if last > start && bytes[last - 1] == UInt8(ascii: "\r") { last -= 1 }
                let text = UnsafeBufferPointer(rebasing: bytes[start..<last])
                if !text.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) {
                    do throws(WireError) {
                        out.changes.append(try Change.decode(text))
                        out.lines.append(line)
                    } catch {
                        out.rejected.append(Rejection(line: line, error: error.message))
                    }
                }
                start = end + 1
                line += 1
            }
        }
        return out
    }

    /// Moves a valid change to the rejected ones (a check beyond the line itself failed).
    public mutating func reject(at index: Int, _ error: String) {
        rejected.append(Rejection(line: lines[index], error: error))
        changes.remove(at: index)
        lines.remove(at: index)
        rejected.sort { $0.line < $1.line }
    }
}

/// The answer to a batch of changes: how many were accepted, which lines were not and why, and the
/// change-log version that holds the accepted ones.
public struct IngestAnswer: Sendable, Equatable {
    public var accepted: Int
    public var rejected: [ChangeLines.Rejection]
    public var version: UInt64
    /// The request carried an idempotency key already applied: nothing was applied again, and
    /// `version` is the first request's (or a later one that includes it).
    public var duplicate: Bool
    /// The producer's accepted changes a second lately, when the server shares the CPU with viewers.
    public var acceptedPerSecond: Double?
    /// Accepted changes that changed nothing because their point held a newer observation time.
    public var stale: Int

    public init(
        accepted: Int, rejected: [ChangeLines.Rejection], version: UInt64, duplicate: Bool = false,
        acceptedPerSecond: Double? = nil, stale: Int = 0
    ) {
        self.accepted = accepted
        self.rejected = rejected
        self.version = version
        self.duplicate = duplicate
        self.acceptedPerSecond = acceptedPerSecond
        self.stale = stale
    }

    /// `{"accepted":N,"rejected":[{"line":3,"error":"..."}],"version":V}` (and `"duplicate":true` for
    /// a retry already applied, `"stale":S` when some accepted changes were older than their point's
    /// newest observation), with `frame` first when answering a `pinwheel.ingest.v1` frame, and
    /// `"acceptedPerSecond":R` last when known.
    public func json(frame: UInt64? = nil) -> [UInt8] {
        var w = JSONWriter(capacity: 64 + rejected.count * 80)
        w.byte(UInt8(ascii: "{"))
        if let frame {
            w.raw("\"type\":\"ack\",\"frame\":")
            w.integer(frame)
            w.byte(UInt8(ascii: ","))
        }
        w.raw("\"accepted\":")
        w.integer(accepted)
        w.raw(",\"rejected\":[")
        for (k, r) in rejected.enumerated() {
            if k > 0 { w.byte(UInt8(ascii: ",")) }
            w.raw("{\"line\":")
            w.integer(r.line)
            w.raw(",\"error\":")
            w.string(r.error)
            w.byte(UInt8(ascii: "}"))
        }
        w.raw("],\"version\":")
        w.integer(version)
        if duplicate { w.raw(",\"duplicate\":true") }
        if stale > 0 {
            w.raw(",\"stale\":")
            w.integer(stale)
        }
        if let acceptedPerSecond {
            w.raw(",\"acceptedPerSecond\":")
            w.integer(Int(acceptedPerSecond.rounded()))
        }
        w.byte(UInt8(ascii: "}"))
        return w.bytes
    }
}

extension IngestAnswer {
    /// Reads an answer as a producer does.
    /// - Throws: ``WireError`` naming the field at fault.
    public static func decode(_ bytes: [UInt8]) throws(WireError) -> IngestAnswer {
        let result: Result<JSONObject, WireError> = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(WireError) in try MessageFields.object(buffer, what: "an answer") }
        }
        let m = MessageFields(object: try result.get(), type: "an answer")
        var rejected: [ChangeLines.Rejection] = []
        for item in try m.array("rejected") {
            guard case .object(let o) = item else { throw MessageFields.invalid("rejected", "must hold objects") }
            let r = MessageFields(object: o, type: "a rejection")
            rejected.append(ChangeLines.Rejection(line: Int(try r.whole("line")), error: try r.string("error")))
        }
        return IngestAnswer(
            accepted: Int(try m.whole("accepted")), rejected: rejected, version: try m.whole("version"),
            stale: m.has("stale") ? Int(try m.whole("stale")) : 0)
    }
}
