/// The formats a dataset can be read from.
public enum DataFormat: String, Sendable, CaseIterable {
    /// Comma-separated values with a header row.
    case csv
    /// A GeoJSON FeatureCollection of Points.
    case geojson
    /// One GeoJSON Feature per line.
    case ndjson

    /// The format a file name suggests: `.csv`, `.geojson`/`.json`, `.ndjson`/`.geojsonl`/`.jsonl`.
    public init?(fileName: String) {
        let lower = fileName.lowercased()
        if lower.hasSuffix(".csv") {
            self = .csv
        } else if lower.hasSuffix(".geojson") || lower.hasSuffix(".json") {
            self = .geojson
        } else if lower.hasSuffix(".ndjson") || lower.hasSuffix(".geojsonl") || lower.hasSuffix(".jsonl") {
            self = .ndjson
        } else {
            return nil
        }
    }
}

/// What to do with a row that cannot be read.
public enum BadRowPolicy: Sendable {
    /// Stop at the first bad row and throw its error.
    case fail
    /// Leave the row out, count it, and keep the first few errors for a report.
    case skip
}

/// A dataset read from text, with what was left out.
public struct ParsedDataset: Sendable {
    /// The rows that were read.
    public var dataset: Dataset
    /// How many rows were left out under ``BadRowPolicy/skip``.
    public var skipped: Int
    /// The errors of the first ``maxReportedErrors`` skipped rows, in input order.
    public var errors: [DataError]
    /// GeoJSON features with `"geometry": null` (RFC 7946's unlocated features), left out under
    /// either policy and not counted in ``skipped``.
    public var unlocated: Int

    /// How many skipped rows keep their error.
    public static let maxReportedErrors = 20

    public init(dataset: Dataset, skipped: Int = 0, errors: [DataError] = [], unlocated: Int = 0) {
        self.dataset = dataset
        self.skipped = skipped
        self.errors = errors
        self.unlocated = unlocated
    }
}

/// Reads datasets from bytes in memory. Ids come from an `id` column or member (a whole number below
/// 2^32, unique) or, when there is none, from the row's position among the data rows (0-based, bad
/// rows included, so skipping a row never renumbers the others). GeoJSON ids that cannot be dataset
/// ids (strings) are kept as the property `id`; see ``GeoJSONParser``.
public enum DatasetParser {
    /// Parses a dataset.
    /// - Parameters:
    ///   - bytes: the whole input, UTF-8.
    ///   - format: how it is written.
    ///   - badRows: fail at the first bad row or skip bad rows with a count.
    /// - Returns: the dataset and what was skipped.
    /// - Throws: ``DataError`` for a bad header or structure, or for the first bad row under `.fail`.
    public static func parse(_ bytes: [UInt8], format: DataFormat, badRows: BadRowPolicy = .fail)
        throws(DataError) -> ParsedDataset
    {
        switch format {
        case .csv: try CSVParser.parse(bytes, badRows: badRows)
        case .geojson: try GeoJSONParser.parseFeatureCollection(bytes, badRows: badRows)
        case .ndjson: try GeoJSONParser.parseNDJSON(bytes, badRows: badRows)
        }
    }
}

/// Accumulates rows of a dataset being read, applying the bad-row policy and checking ids.
struct DatasetBuilder {
    var ids: [UInt32] = []
    var coordinates: [Double] = []
    var values: [PropertyValue?] = []
    var skipped = 0
    var errors: [DataError] = []
    var seenIDs = Set<UInt32>()
    let badRows: BadRowPolicy

    init(badRows: BadRowPolicy) { self.badRows = badRows }

    /// Records a bad row: throws under `.fail`, counts it under `.skip`.
    mutating func reject(_ error: DataError) throws(DataError) {
        if badRows == .fail { throw error }
        skipped += 1
        if errors.count < ParsedDataset.maxReportedErrors { errors.append(error) }
    }

    /// Checks a coordinate pair read from a row.
    static func check(
        lat: Double?, latText: @autoclosure () -> String, lon: Double?,
        lonText: @autoclosure () -> String, line: Int, latColumn: String, lonColumn: String
    )
        throws(DataError) -> (lat: Double, lon: Double)
    {
        guard let lat, lat.isFinite, lat >= -90, lat <= 90 else {
            throw .invalidLatitude(line: line, column: latColumn, value: latText())
        }
        guard let lon, lon.isFinite, lon >= -180, lon <= 180 else {
            throw .invalidLongitude(line: line, column: lonColumn, value: lonText())
        }
        return (lat, lon)
    }

    /// Checks that an id is new, then remembers it.
    mutating func claim(id: UInt32, line: Int, column: String) throws(DataError) {
        guard seenIDs.insert(id).inserted else {
            throw .duplicateID(line: line, column: column, value: String(id))
        }
    }

    /// Appends the id and coordinates of a good row (its property values are appended by the caller).
    mutating func append(id: UInt32, lat: Double, lon: Double) {
        ids.append(id)
        coordinates.append(lon)  // x at 2i
        coordinates.append(lat)  // y at 2i+1
    }

    func finish(columns: [String], names: [UInt32: String] = [:]) -> ParsedDataset {
        var dataset = Dataset(
            ids: ids, coordinates: coordinates, properties: PropertyTable(columns: columns, values: values))
        dataset.names = names
        return ParsedDataset(dataset: dataset, skipped: skipped, errors: errors)
    }
}
