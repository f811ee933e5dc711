/// Typed property values as bytes, for change-log records and snapshots: a tag byte, then 0 a string
/// (u32 length and UTF-8), 1 a number (f64), 2 false, 3 true; a snapshot's cell may also be 4, no value.
enum PropertyValueCoding {
    static func write(_ value: PropertyValue, _ w: inout ByteWriter) {
        switch value {
        case .string(let s):
            w.u8(0)
            w.string(s)
        case .number(let d):
            w.u8(1)
            w.f64(d)
        case .bool(let b): w.u8(b ? 3 : 2)
        }
    }

    static func write(cell: PropertyValue?, _ w: inout ByteWriter) {
        if let cell { write(cell, &w) } else { w.u8(4) }
    }

    static func read(_ r: inout ByteReader) throws(ByteReader.Failure) -> PropertyValue {
        guard let value = try readCell(&r) else {
            throw ByteReader.Failure(offset: r.offset - 1, reason: "a property without a value")
        }
        return value
    }

    static func readCell(_ r: inout ByteReader) throws(ByteReader.Failure) -> PropertyValue? {
        switch try r.u8() {
        case 0: return .string(try r.string())
        case 1:
            let d = try r.f64()
            guard d.isFinite else {
                throw ByteReader.Failure(offset: r.offset - 8, reason: "a number that is not finite")
            }
            return .number(d)
        case 2: return .bool(false)
        case 3: return .bool(true)
        case 4: return nil
        case let tag: throw ByteReader.Failure(offset: r.offset - 1, reason: "unknown value tag \(tag)")
        }
    }
}
