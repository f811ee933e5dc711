/// One GeoJSON Feature read for a dataset row (RFC 7946 §3.2).
///
/// Members other than `type`, `id`, `geometry` and `properties` (`bbox`, foreign members) are
/// ignored, as are a Point's third and further coordinates (altitude).
struct GeoJSONFeature {
    /// Longitude and latitude, degrees; nil for `"geometry": null`, an unlocated feature.
    var location: (lon: Double, lat: Double)?
    /// The feature's `id` when it is a whole number in 0..<2^32, the dataset id; nil otherwise.
    var numericID: UInt32?
    /// Any other `id` (a string, or a number that cannot be a dataset id) as text, kept as the
    /// property `id`; the point is then numbered by its position.
    var textID: String?
    /// The `properties` object; nil when absent or null.
    var properties: JSONObject?

    /// Validates one Feature.
    /// - Parameters:
    ///   - value: the parsed feature.
    ///   - line: 1-based line where it starts, for errors.
    ///   - path: its JSON path for errors, e.g. `features[3]`.
    /// - Throws: ``DataError`` naming the path: not a Feature, a geometry other than Point (naming its
    ///   type), bad coordinates, an id that is neither string nor number, properties not an object.
    init(_ value: JSONValue, line: Int, path: String) throws(DataError) {
        guard case .object(let feature) = value else {
            throw .invalidFeature(line: line, column: path, reason: "expected a Feature object, got \(value.kindName)")
        }
        guard case .string("Feature") = feature["type"] else {
            throw .invalidFeature(line: line, column: "\(path).type", reason: "expected \"Feature\"")
        }
        switch feature["id"] {
        case nil: break
        case .number(let d) where d >= 0 && d <= Double(UInt32.max) && d == d.rounded(.towardZero):
            numericID = UInt32(d)
        case .number(let d): textID = GeoJSONParser.text(.number(d))
        case .string(let s): textID = s
        case let other?:
            throw .invalidID(line: line, column: "\(path).id", value: GeoJSONParser.text(other))
        }
        switch feature["geometry"] {
        case .null:
            // RFC 7946 §3.2: a feature may be unlocated; it is counted, not drawn.
            location = nil
        case .object(let geometry):
            location = try Self.point(geometry, line: line, path: "\(path).geometry")
        case let other:
            throw .invalidFeature(
                line: line, column: "\(path).geometry",
                reason: "expected a Point geometry object or null, got \(other?.kindName ?? "nothing")")
        }
        switch feature["properties"] {
        case .object(let o): properties = o
        case nil, .null: properties = nil
        case let other?:
            throw .invalidFeature(
                line: line, column: "\(path).properties", reason: "expected an object, got \(other.kindName)")
        }
    }

    /// The position of a Point geometry.
    private static func point(_ geometry: JSONObject, line: Int, path: String)
        throws(DataError) -> (lon: Double, lat: Double)
    {
        guard case .string(let type) = geometry["type"] else {
            throw .invalidFeature(line: line, column: "\(path).type", reason: "expected a geometry type")
        }
        guard type == "Point" else { throw .unsupportedGeometry(line: line, column: "\(path).type", type: type) }
        guard case .array(let coordinates) = geometry["coordinates"], coordinates.count >= 2 else {
            throw .invalidFeature(
                line: line, column: "\(path).coordinates", reason: "expected [longitude, latitude]")
        }
        func number(_ v: JSONValue) -> Double? { if case .number(let d) = v { d } else { nil } }
        let (lat, lon) = try DatasetBuilder.check(
            lat: number(coordinates[1]), latText: GeoJSONParser.text(coordinates[1]),
            lon: number(coordinates[0]), lonText: GeoJSONParser.text(coordinates[0]),
            line: line, latColumn: "\(path).coordinates[1]", lonColumn: "\(path).coordinates[0]")
        return (lon, lat)
    }
}
