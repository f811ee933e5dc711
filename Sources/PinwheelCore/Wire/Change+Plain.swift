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
        c.skipSpace()
        guard c.take(UInt8(ascii: "{")) else { return nil }
        repeat {
            c.skipSpace()
            guard let key = c.plainChangeKey() else { return nil }
            c.skipSpace()
            guard c.take(UInt8(ascii: ":")) else { return nil }
            c.skipSpace()
            switch key {
            case .op:
                guard f.isUpsert == nil, let isUpsert = c.plainOp() else { return nil }
                f.isUpsert = isUpsert
            case .id:
                guard f.key == nil, let pointKey = c.plainPointKey() else { return nil }
                f.key = pointKey
            case .lat:
                guard f.lat == nil, let lat = c.plainNumber() else { return nil }
                f.lat = lat
            case .lon:
                guard f.lon == nil, let lon = c.plainNumber() else { return nil }
                f.lon = lon
            case .properties:
                guard f.properties == nil, let properties = c.plainProperties() else { return nil }
                f.properties = properties
            }
            c.skipSpace()
        } while c.take(UInt8(ascii: ","))
        guard c.take(UInt8(ascii: "}")) else { return nil }
        c.skipSpace()
        guard c.i == bytes.count, let isUpsert = f.isUpsert, let key = f.key else { return nil }
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
private enum ChangeKey: CaseIterable {
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
    var properties: [String: String]?
}

extension JSONReader.Cursor {
    fileprivate mutating func plainChangeKey() -> ChangeKey? {
        guard let (start, end) = plainString() else { return nil }
        return ChangeKey.allCases.first { equals($0.name, from: start, to: end) }
    }

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
    fileprivate mutating func plainProperties() -> [String: String]? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var properties: [String: String] = [:]
        skipSpace()
        if take(UInt8(ascii: "}")) { return properties }
        repeat {
            skipSpace()
            guard let name = plainText(), properties[name] == nil else { return nil }
            skipSpace()
            guard take(UInt8(ascii: ":")) else { return nil }
            skipSpace()
            guard let value = plainPropertyValue() else { return nil }
            properties[name] = value
            skipSpace()
        } while take(UInt8(ascii: ","))
        return take(UInt8(ascii: "}")) ? properties : nil
    }

    private mutating func plainPropertyValue() -> String? {
        guard i < bytes.count else { return nil }
        switch bytes[i] {
        case UInt8(ascii: "\""): return plainText()
        case UInt8(ascii: "t"): return takeLiteral("true") ? "true" : nil
        case UInt8(ascii: "f"): return takeLiteral("false") ? "false" : nil
        default:
            guard let d = plainNumber(), d.isFinite else { return nil }
            return MessageFields.format(d)
        }
    }
}
