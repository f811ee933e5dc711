/// Why a dataset could not be read. Row problems name the 1-based line where the row starts, the
/// column (a CSV header name, or a JSON path such as `geometry.coordinates[1]`) and the bad value.
public enum DataError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The input holds no header (CSV) or no features at all.
    case empty
    /// The CSV header has no column for a coordinate; `accepted` lists the names looked for.
    case missingColumn(line: Int, accepted: [String], header: [String])
    /// Two header columns share a name (compared case-insensitively).
    case duplicateColumn(line: Int, column: String)
    /// A CSV row with a different number of fields from the header.
    case wrongFieldCount(line: Int, expected: Int, found: Int)
    /// A quoted CSV field that never closes; `line` is where it opens.
    case unterminatedQuote(line: Int, column: String)
    /// A quote inside an unquoted CSV field, or text after a closing quote.
    case strayQuote(line: Int, column: String)
    /// Bytes that are not UTF-8.
    case invalidUTF8(line: Int, column: String)
    /// Not a number, not finite, or outside -90...90.
    case invalidLatitude(line: Int, column: String, value: String)
    /// Not a number, not finite, or outside -180...180.
    case invalidLongitude(line: Int, column: String, value: String)
    /// Not a whole number in 0..<2^32.
    case invalidID(line: Int, column: String, value: String)
    /// A text id that is empty or longer than ``PointKey/maxNameBytes`` bytes.
    case invalidName(line: Int, column: String, value: String)
    /// An id already used by an earlier row.
    case duplicateID(line: Int, column: String, value: String)
    /// Text that is not JSON (GeoJSON, or one NDJSON line).
    case invalidJSON(line: Int, column: Int, reason: String)
    /// JSON that is not the expected GeoJSON shape, e.g. an array where a Feature belongs.
    case invalidFeature(line: Int, column: String, reason: String)
    /// A GeoJSON geometry other than Point (LineString, Polygon, MultiPoint ...); `type` names it.
    case unsupportedGeometry(line: Int, column: String, type: String)

    /// The line the problem is on; nil for whole-input problems.
    public var line: Int? {
        switch self {
        case .empty: nil
        case .missingColumn(let line, _, _), .duplicateColumn(let line, _), .wrongFieldCount(let line, _, _),
            .unterminatedQuote(let line, _), .strayQuote(let line, _), .invalidUTF8(let line, _),
            .invalidLatitude(let line, _, _), .invalidLongitude(let line, _, _), .invalidID(let line, _, _),
            .invalidName(let line, _, _),
            .duplicateID(let line, _, _), .invalidJSON(let line, _, _), .invalidFeature(let line, _, _),
            .unsupportedGeometry(let line, _, _):
            line
        }
    }

    public var description: String {
        switch self {
        case .empty:
            "no data: the input is empty"
        case .missingColumn(let line, let accepted, let header):
            "line \(line): no column named \(accepted.joined(separator: " or ")) in header \(header)"
        case .duplicateColumn(let line, let column):
            "line \(line), column \"\(column)\": the header names this column twice"
        case .wrongFieldCount(let line, let expected, let found):
            "line \(line): expected \(expected) fields as in the header, found \(found)"
        case .unterminatedQuote(let line, let column):
            "line \(line), column \"\(column)\": a quoted field is never closed"
        case .strayQuote(let line, let column):
            "line \(line), column \"\(column)\": a quote inside an unquoted field or text after a closing quote"
        case .invalidUTF8(let line, let column):
            "line \(line), column \"\(column)\": the text is not valid UTF-8"
        case .invalidLatitude(let line, let column, let value):
            "line \(line), column \"\(column)\": latitude \"\(value)\" is not a number in -90...90"
        case .invalidLongitude(let line, let column, let value):
            "line \(line), column \"\(column)\": longitude \"\(value)\" is not a number in -180...180"
        case .invalidID(let line, let column, let value):
            "line \(line), column \"\(column)\": id \"\(value)\" is not a whole number in 0..<4294967296"
        case .invalidName(let line, let column, let value):
            "line \(line), column \"\(column)\": id \"\(value)\" must be 1 to \(PointKey.maxNameBytes) bytes long"
        case .duplicateID(let line, let column, let value):
            "line \(line), column \"\(column)\": id \(value) is already used by an earlier row"
        case .invalidJSON(let line, let column, let reason):
            "line \(line), column \(column): not JSON: \(reason)"
        case .invalidFeature(let line, let column, let reason):
            "line \(line), \(column): \(reason)"
        case .unsupportedGeometry(let line, let column, let type):
            "line \(line), \(column): a \(type) geometry is not a point; only Point features (or \"geometry\": null, "
                + "left out) can be served"
        }
    }
}
