/// Reading changes as producers send them: one JSON object per line (`POST /v1/changes`) or per frame
/// (`pinwheel.ingest.v1`).
extension Change {
    /// Longest line (or frame) a change may take, in bytes.
    public static let maxLineBytes = 16 * 1024

    /// Decodes and validates one change.
    /// - Parameter bytes: the UTF-8 text of one line, without its newline.
    /// - Returns: the change, every field checked.
    /// - Throws: ``WireError`` naming the field at fault, e.g. "lat must be between -90 and 90, got 95".
    public static func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws(WireError) -> Change {
        guard bytes.count <= maxLineBytes else {
            throw WireError(.invalidField, message: "a change must fit in \(maxLineBytes) bytes, got \(bytes.count)")
        }
        if let plain = decodePlain(bytes) { return plain }
        return try decodeGeneral(bytes)
    }

    /// ``decode(_:)-(UnsafeBufferPointer<UInt8>)`` through a JSON tree: every form, every error.
    static func decodeGeneral(_ bytes: UnsafeBufferPointer<UInt8>) throws(WireError) -> Change {
        let object = try MessageFields.object(bytes, what: "a change")
        let op = try MessageFields(object: object, type: "a change").string("op")
        let m = MessageFields(object: object, type: op)
        switch op {
        case "upsert":
            let key = try decodeKey(m)
            let lat = try m.number("lat", in: -90...90)
            let lon = try m.number("lon", in: -180...180)
            var properties: [String: PropertyValue] = [:]
            if m.has("properties") {
                let object = try m.object("properties").object
                for (name, value) in object.members {
                    switch value {
                    case .string(let s): properties[name] = .string(s)
                    case .number(let d) where d.isFinite: properties[name] = .number(d == 0 ? 0 : d)
                    case .bool(let b): properties[name] = .bool(b)
                    case .null: continue
                    default:
                        throw MessageFields.invalid(
                            "properties",
                            "values must be strings, numbers or booleans; \"\(name)\" is \(value.kindName)")
                    }
                }
            }
            return .upsert(key, lat: lat, lon: lon, properties: properties)
        case "delete":
            return .delete(try decodeKey(m))
        default:
            throw WireError(
                .invalidField, field: "op", message: "unknown op \"\(op)\"; expected upsert or delete")
        }
    }

    /// Decodes one change held in an array.
    public static func decode(_ bytes: [UInt8]) throws(WireError) -> Change {
        let result: Result<Change, WireError> = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(WireError) in try decode(buffer) }
        }
        return try result.get()
    }

    /// Decodes one change held in a string.
    public static func decode(_ text: String) throws(WireError) -> Change {
        try decode(Array(text.utf8))
    }

    private static func decodeKey(_ m: MessageFields) throws(WireError) -> PointKey {
        switch try m.value("id") {
        case .string(let name):
            guard !name.isEmpty, name.utf8.count <= PointKey.maxNameBytes else {
                throw MessageFields.invalid(
                    "id", "must be 1 to \(PointKey.maxNameBytes) bytes long, got \(name.utf8.count)")
            }
            return .name(name)
        case .number:
            let n = try MessageFields.whole(m.value("id"), name: "id", in: 0...Double(PointKey.maxNumber))
            return .number(UInt32(n))
        case let other:
            throw MessageFields.invalid("id", "must be a string or a whole number, got \(other.kindName)")
        }
    }
}
