/// The change lines producers send, read in one pass without a JSON tree: building a dictionary of
/// values for each line made reading a line four times as dear, and ingest runs on the cores viewers
/// are served from. Only the plain form is read here: an object of a change's own keys, each once,
/// with a string or whole-number `id`, number coordinates, and `properties` whose values are strings,
/// numbers or booleans. Anything else (an unknown or repeated key, `null`, an escape, a value out of
/// range) goes to the general path, which names what is wrong; the checks are that path's own, so
/// both give the same change.
extension Change {
    static func decodePlain(_ bytes: UnsafeBufferPointer<UInt8>) -> Change? {
        var c = JSONReader.Cursor(bytes: bytes)
        var f = PlainChangeFields()
        let read = c.plainObject { c, name in
            guard let key = c.key(at: name, of: ChangeKey.self) else { return false }
            switch key {
            case .op:
                guard f.isUpsert == nil, let isUpsert = c.plainOp() else { return false }
                f.isUpsert = isUpsert
            case .id:
                guard f.key == nil, let pointKey = c.plainPointKey() else { return false }
                f.key = pointKey
            case .lat:
                guard f.lat == nil, let lat = c.plainNumber() else { return false }
                f.lat = lat
            case .lon:
                guard f.lon == nil, let lon = c.plainNumber() else { return false }
                f.lon = lon
            case .properties:
                guard f.properties == nil, let properties = c.plainProperties() else { return false }
                f.properties = properties
            }
            return true
        }
        guard read, c.atEndAfterSpace(), let isUpsert = f.isUpsert, let key = f.key else { return nil }
        guard isUpsert else {
            return f.lat == nil && f.lon == nil && f.properties == nil ? .delete(key) : nil
        }
        guard let lat = f.lat, let lon = f.lon,
            let lat = try? MessageFields.number(.number(lat), name: "lat", in: -90...90),
            let lon = try? MessageFields.number(.number(lon), name: "lon", in: -180...180)
        else { return nil }
        return .upsert(key, lat: lat, lon: lon, properties: f.properties ?? [:])
    }
}

/// The keys of a plain change.
private enum ChangeKey: PlainKey {
    case op, id, lat, lon, properties

    var name: StaticString {
        switch self {
        case .op: "op"
        case .id: "id"
        case .lat: "lat"
        case .lon: "lon"
        case .properties: "properties"
        }
    }
}

/// The values of a plain change, as read.
private struct PlainChangeFields {
    var isUpsert: Bool?
    var key: PointKey?
    var lat, lon: Double?
    var properties: [String: PropertyValue]?
}

extension JSONReader.Cursor {
    /// True for `"upsert"`, false for `"delete"`, nil for anything else.
    fileprivate mutating func plainOp() -> Bool? {
        guard let (start, end) = plainString() else { return nil }
        if equals("upsert", from: start, to: end) { return true }
        if equals("delete", from: start, to: end) { return false }
        return nil
    }

    /// A name of 1 to ``PointKey/maxNameBytes`` bytes or a whole number up to ``PointKey/maxNumber``.
    fileprivate mutating func plainPointKey() -> PointKey? {
        guard i < bytes.count else { return nil }
        if bytes[i] == UInt8(ascii: "\"") {
            guard let name = plainText(), !name.isEmpty, name.utf8.count <= PointKey.maxNameBytes else { return nil }
            return .name(name)
        }
        guard let value = plainNumber(),
            let n = try? MessageFields.whole(.number(value), name: "id", in: 0...Double(PointKey.maxNumber))
        else { return nil }
        return .number(UInt32(n))
    }

    /// An object of strings, finite numbers and booleans, each key once, the values as a change keeps
    /// them.
    fileprivate mutating func plainProperties() -> [String: PropertyValue]? {
        var properties: [String: PropertyValue] = [:]
        let read = plainObject { c, name in
            guard let name = c.text(at: name), properties[name] == nil, let value = c.plainPropertyValue() else {
                return false
            }
            properties[name] = value
            return true
        }
        return read ? properties : nil
    }

    fileprivate mutating func plainPropertyValue() -> PropertyValue? {
        guard i < bytes.count else { return nil }
        switch bytes[i] {
        case UInt8(ascii: "\""): return plainText().map { .string($0) }
        case UInt8(ascii: "t"): return takeLiteral("true") ? .bool(true) : nil
        case UInt8(ascii: "f"): return takeLiteral("false") ? .bool(false) : nil
        default:
            guard let d = plainNumber(), d.isFinite else { return nil }
            return .number(d == 0 ? 0 : d)
        }
    }
}
