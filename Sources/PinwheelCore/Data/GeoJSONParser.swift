/// Reads GeoJSON Points: a FeatureCollection, or NDJSON with one Feature per line.
///
/// Each feature needs `"geometry":{"type":"Point","coordinates":[lon,lat]}` (further coordinates
/// such as altitude are ignored) or `"geometry": null`, an unlocated feature that is left out and
/// counted in ``ParsedDataset/unlocated`` (RFC 7946 §3.2), never a bad row. Other geometry types are
/// bad rows (``DataError/unsupportedGeometry(line:column:type:)``).
///
/// Ids: an `id` that is a whole number in 0..<2^32 is the dataset id. Any other `id` (a string, as
/// exports often have, or a larger, negative or fractional number) is kept as text in the property
/// `id` (unique, or the row is bad) and the point is numbered by its position (0-based, counting
/// every feature), as is a feature without `id`. `properties` become columns in first-seen order:
/// strings, numbers and booleans keep their type, nested values are kept as their JSON text, and a
/// missing or null value, or an empty string, is no value.
public enum GeoJSONParser {
    /// Parses a FeatureCollection; see ``DatasetParser/parse(_:format:badRows:)``.
    public static func parseFeatureCollection(_ bytes: [UInt8], badRows: BadRowPolicy = .fail)
        throws(DataError) -> ParsedDataset
    {
        let lines = LineIndex(bytes)
        let root: JSONValue
        do {
            root = try JSONReader.parse(bytes)
        } catch {
            throw .invalidJSON(line: error.line, column: error.column, reason: error.reason)
        }
        guard case .object(let collection) = root else {
            throw .invalidFeature(
                line: 1, column: "root", reason: "expected a FeatureCollection object, got \(root.kindName)")
        }
        guard case .string("FeatureCollection") = collection["type"] else {
            throw .invalidFeature(
                line: lines.line(of: collection.offset), column: "type",
                reason: "expected \"FeatureCollection\"")
        }
        guard case .array(let features) = collection["features"] else {
            throw .invalidFeature(
                line: lines.line(of: collection.offset), column: "features",
                reason: "expected an array of features")
        }
        var collector = Collector(badRows: badRows)
        for (index, value) in features.enumerated() {
            let line: Int
            if case .object(let o) = value {
                line = lines.line(of: o.offset)
            } else {
                line = lines.line(of: collection.offset)
            }
            try collector.add(value, index: index, line: line, path: "features[\(index)]")
        }
        return collector.finish()
    }

    /// Parses NDJSON: one Feature per non-blank line; a line that is not JSON is a bad row. For input
    /// too large to hold next to its dataset, feed it piece by piece to an ``NDJSONStream``.
    public static func parseNDJSON(_ bytes: [UInt8], badRows: BadRowPolicy = .fail) throws(DataError) -> ParsedDataset {
        var stream = NDJSONStream(badRows: badRows)
        let result: Result<Void, DataError> = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(DataError) in try stream.feed(buffer) }
        }
        try result.get()
        return try stream.finish()
    }

    /// A JSON value written compactly.
    static func text(_ v: JSONValue) -> String {
        var writer = JSONWriter(capacity: 32)
        writer.value(v)
        return writer.text
    }
}

/// Turns byte offsets into 1-based line numbers.
struct LineIndex {
    /// Offsets just after each line feed.
    var lineStarts: [Int] = [0]

    init(_ bytes: [UInt8]) {
        for (k, c) in bytes.enumerated() where c == UInt8(ascii: "\n") { lineStarts.append(k + 1) }
    }

    func line(of offset: Int) -> Int {
        var lo = 0
        var hi = lineStarts.count
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if lineStarts[mid] <= offset { lo = mid } else { hi = mid }
        }
        return lo + 1
    }
}
