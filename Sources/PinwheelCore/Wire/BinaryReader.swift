/// The running state of `pinwheel.v1+bin` (docs/protocol.md, "Running state"), carried from one binary
/// message of a session to the next: the last batch's seq and number, the last id's tag and low part,
/// the last feature's fixed-point position, the last parent's tag. All 0 when the connection opens.
struct BinaryRunningState {
    var seq: UInt64 = 0
    var number: UInt64 = 0
    var tag: UInt64 = 0
    var low: Int64 = 0
    var lat: Int64 = 0
    var lon: Int64 = 0
    var parentTag: UInt64 = 0
}

/// Reads the numbers, strings, ids and names of one `pinwheel.v1+bin` message, keeping the running
/// state. Every error names what was being read and its byte offset.
struct BinaryReader {
    let bytes: UnsafeBufferPointer<UInt8>
    /// The next byte to read.
    var offset = 0
    var state: BinaryRunningState
    /// Property and aggregate names, in the order the message defined them.
    var names: [String] = []

    init(_ bytes: UnsafeBufferPointer<UInt8>, state: BinaryRunningState) {
        self.bytes = bytes
        self.state = state
    }

    var remaining: Int { bytes.count - offset }

    /// An error about `what` (e.g. "add[3] lon"), found at byte `at` (default: the next byte).
    /// `field` is the message's part at fault, as the JSON decoder names fields.
    func invalid(_ field: String, _ what: String, _ problem: String, at: Int? = nil) -> WireError {
        WireError(.invalidField, field: field, message: "\(what) at byte \(at ?? offset): \(problem)")
    }

    mutating func byte(_ field: String, _ what: @autoclosure () -> String) throws(WireError) -> UInt8 {
        guard offset < bytes.count else { throw invalid(field, what(), "the frame ends early") }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func varint(_ field: String, _ what: @autoclosure () -> String) throws(WireError) -> UInt64 {
        let start = offset
        var value: UInt64 = 0
        for k in 0..<8 {
            let b = try byte(field, what())
            value |= UInt64(b & 0x7F) << (7 * UInt64(k))
            if b < 0x80 { return value }
        }
        throw invalid(field, what(), "a varint longer than 8 bytes", at: start)
    }

    /// A varint that must be at most `limit` (the JSON form's 2^53 − 1 by default).
    mutating func whole(
        _ field: String, _ what: @autoclosure () -> String, limit: UInt64 = UInt64(MessageFields.maxWhole)
    ) throws(WireError) -> UInt64 {
        let start = offset
        let v = try varint(field, what())
        guard v <= limit else { throw invalid(field, what(), "\(v) is over \(limit)", at: start) }
        return v
    }

    /// `base + zigzag`, which must lie in 0 … 2^53 − 1 as the JSON form's whole numbers do.
    mutating func whole(
        after base: UInt64, _ field: String, _ what: @autoclosure () -> String
    ) throws(WireError) -> UInt64 {
        let start = offset
        let delta = try zigzag(field, what())
        let (value, overflow) = Int64(bitPattern: base).addingReportingOverflow(delta)
        guard !overflow, value >= 0, value < 1 << 53 else {
            throw invalid(field, what(), "\(base) + \(delta) is outside 0 to 2^53 − 1", at: start)
        }
        return UInt64(value)
    }

    /// A position on a grid of `unit`: `floor(base ÷ unit)` plus a zigzag varint, times `unit`; nil
    /// when that lies beyond ±`limit` (checked before any arithmetic could overflow).
    mutating func position(
        after base: Int64, unit: Int64, limit: Int64, _ field: String, _ what: @autoclosure () -> String
    ) throws(WireError) -> Int64? {
        let delta = try zigzag(field, what())
        let steps = BinaryGrid.steps(base, unit: unit)
        // Both are within 2^33 of 0 when the result is in bounds.
        guard delta.magnitude <= 1 << 34, steps.magnitude <= 1 << 34 else { return nil }
        let fixed = (steps + delta) * unit
        return fixed.magnitude <= limit ? fixed : nil
    }

    mutating func zigzag(_ field: String, _ what: @autoclosure () -> String) throws(WireError) -> Int64 {
        let v = try varint(field, what())
        return Int64(bitPattern: v >> 1) ^ -Int64(bitPattern: v & 1)
    }

    mutating func f64(_ field: String, _ what: @autoclosure () -> String) throws(WireError) -> Double {
        guard remaining >= 8 else { throw invalid(field, what(), "the frame ends early") }
        var bits: UInt64 = 0
        for k in 0..<8 { bits |= UInt64(bytes[offset + k]) << (8 * UInt64(k)) }
        offset += 8
        return Double(bitPattern: bits)
    }

    mutating func string(_ field: String, _ what: @autoclosure () -> String) throws(WireError) -> String {
        let start = offset
        let length = try varint(field, what())
        guard length <= UInt64(remaining) else {
            throw invalid(
                field, what(), "the frame ends early: a string of \(length) bytes, \(remaining) left", at: start)
        }
        let utf8 = UnsafeBufferPointer(rebasing: bytes[offset..<offset + Int(length)])
        guard let s = String(validating: utf8, as: UTF8.self) else {
            throw invalid(field, what(), "a string that is not UTF-8", at: start)
        }
        offset += Int(length)
        return s
    }

    /// A property value: a tag, then 0 a string, 1 a finite f64, 2 false, 3 true.
    mutating func propertyValue(_ field: String, _ what: @autoclosure () -> String) throws(WireError) -> PropertyValue {
        let start = offset
        switch try byte(field, what()) {
        case 0: return .string(try string(field, what()))
        case 1:
            let d = try f64(field, what())
            guard d.isFinite else { throw invalid(field, what(), "a number that is not finite", at: start + 1) }
            return .number(d)
        case 2: return .bool(false)
        case 3: return .bool(true)
        case let tag: throw invalid(field, what(), "unknown value tag \(tag)", at: start)
        }
    }

    /// A name reference: an index into the table, or the table's size followed by a new name.
    mutating func name(_ field: String, _ what: @autoclosure () -> String) throws(WireError) -> String {
        let start = offset
        let r = try varint(field, what())
        if r < UInt64(names.count) { return names[Int(r)] }
        guard r == UInt64(names.count) else {
            throw invalid(field, what(), "name \(r) is not in the table of \(names.count) names", at: start)
        }
        names.append(try string(field, what()))
        return names[names.count - 1]
    }

    /// An id relative to the previous one; it becomes the previous one.
    mutating func id(_ field: String, _ what: @autoclosure () -> String) throws(WireError) -> FeatureID {
        let start = offset
        return try id(try varint(field, what()), field, what(), at: start)
    }

    /// The id whose relative value `v` was read from byte `start`; the tag follows when `v`'s bit 0 is set.
    mutating func id(
        _ v: UInt64, _ field: String, _ what: @autoclosure () -> String, at start: Int
    ) throws(WireError) -> FeatureID {
        let id = try relativeID(v, field, what(), low: state.low, tag: state.tag, at: start)
        state.tag = id >> 32
        state.low = Int64(id & 0xFFFF_FFFF)
        return id
    }

    /// A parent written out (mode 3): relative to its feature's low part and the running parent tag,
    /// which it updates.
    mutating func parent(
        of id: FeatureID, _ field: String, _ what: @autoclosure () -> String
    ) throws(WireError) -> FeatureID {
        let start = offset
        let v = try varint(field, what())
        let parent = try relativeID(v, field, what(), low: Int64(id & 0xFFFF_FFFF), tag: state.parentTag, at: start)
        state.parentTag = parent >> 32
        return parent
    }

    /// `v = 2 × zigzag(low − base low) + t`, then the new tag when `t` is 1.
    private mutating func relativeID(
        _ v: UInt64, _ field: String, _ what: @autoclosure () -> String, low base: Int64, tag previous: UInt64,
        at start: Int
    ) throws(WireError) -> FeatureID {
        let newLow = base + (Int64(bitPattern: v >> 2) ^ -Int64(bitPattern: (v >> 1) & 1))
        let newTag = v & 1 == 1 ? try varint(field, what()) : previous
        guard (0...0xFFFF_FFFF).contains(newLow), newTag < 1 << 21 else {
            throw invalid(field, what(), "an id outside 0 to 2^53 − 1 (tag \(newTag), low part \(newLow))", at: start)
        }
        return newTag << 32 | UInt64(newLow)
    }

    /// A count of items that take at least one byte each: no more than the bytes left.
    mutating func count(_ field: String, _ what: @autoclosure () -> String) throws(WireError) -> Int {
        let start = offset
        let n = try varint(field, what())
        guard n <= UInt64(remaining) else {
            throw invalid(field, what(), "the frame ends early: \(n) items, \(remaining) bytes left", at: start)
        }
        return Int(n)
    }
}
