import Foundation
import PinwheelCore

/// A dataset ready to serve, with the name `hello` announces and what was left out reading it.
public struct LoadedDataset: Sendable {
    /// Short name, e.g. "geonames-cities+malls" or the file's name.
    public var name: String
    public var dataset: Dataset
    /// The smallest box holding every point, computed once; nil when empty.
    public var bounds: BBox?
    /// GeoJSON features with `"geometry": null`, left out.
    public var unlocated: Int
    /// Bad rows left out under ``BadRowPolicy/skip``.
    public var skipped: Int
    /// The first skipped rows' errors (line, column, what was wrong).
    public var skippedErrors: [DataError]

    public init(name: String, dataset: Dataset, unlocated: Int = 0, skipped: Int = 0, skippedErrors: [DataError] = []) {
        self.name = name
        self.dataset = dataset
        bounds = dataset.bounds
        self.unlocated = unlocated
        self.skipped = skipped
        self.skippedErrors = skippedErrors
    }

    /// What `hello` says about this dataset.
    /// - Parameter aggregates: the clusterer's aggregates.
    public func helloInfo(aggregates: [Aggregate]) -> HelloMessage.DatasetInfo {
        HelloMessage.DatasetInfo(
            name: name, points: dataset.count, bounds: bounds, unlocated: unlocated, skipped: skipped,
            aggregates: aggregates)
    }
}

/// Where `pinwheel serve` takes its points from.
public enum DatasetSource: Sendable {
    /// The embedded demo: the GeoNames cities of data/ plus the shops of four malls.
    case demo
    /// A CSV, GeoJSON or NDJSON file, its format told by its extension.
    case file(String)
    /// N generated points (deterministic), with `tenant` and `speed` columns when `tenants` is above 0.
    case synthetic(Int, tenants: Int = 0)

    /// Reads the points.
    /// - Parameter badRows: what a bad row in a file does: stop the load, or be left out and counted.
    /// - Throws: ``DatasetLoadError`` naming the file, and for a bad row its line and column.
    public func load(badRows: BadRowPolicy = .fail) throws -> LoadedDataset {
        switch self {
        case .demo:
            return try DemoDataset.load()
        case .file(let path):
            let name = URL(fileURLWithPath: path).lastPathComponent
            let parsed = try DemoDataset.parse(path, badRows: badRows)
            return LoadedDataset(
                name: name, dataset: parsed.dataset, unlocated: parsed.unlocated, skipped: parsed.skipped,
                skippedErrors: parsed.errors)
        case .synthetic(let count, let tenants):
            var generator = SyntheticGenerator()
            generator.tenants = tenants
            return LoadedDataset(name: "synthetic-\(count)", dataset: generator.dataset(count: count))
        }
    }
}

/// Why a dataset could not be loaded.
public enum DatasetLoadError: Error, CustomStringConvertible {
    /// The file could not be read at all.
    case unreadable(file: String, reason: String)
    /// The file's name does not say CSV, GeoJSON or NDJSON.
    case unknownFormat(file: String)
    /// A row or the structure of the file is bad; `error` names the line and column.
    case badData(file: String, error: DataError)
    /// The embedded demo files are not next to the executable nor under the working directory.
    case demoNotFound

    public var description: String {
        switch self {
        case .unreadable(let file, let reason): "\(file): cannot read: \(reason)"
        case .unknownFormat(let file): "\(file): unknown format (expected .csv, .geojson, .json, .ndjson or .jsonl)"
        case .badData(let file, let error):
            // A problem on a line may be a bad row, which `serve` can leave out instead.
            error.line == nil
                ? "\(file): \(error)" : "\(file): \(error) (if it is a bad row, --on-bad-row skip leaves it out)"
        case .demoNotFound: "the demo dataset (data/geonames_rg_cities1000_145k.csv) was not found; pass --data FILE"
        }
    }
}

/// The embedded demo dataset: GeoNames cities (CC BY 4.0, see data/README.md) and mall shops that
/// share one coordinate per mall, so the demo shows same-coordinate spreading.
enum DemoDataset {
    static let citiesFile = "geonames_rg_cities1000_145k.csv"
    static let mallsFile = "malls.csv"

    static func load() throws -> LoadedDataset {
        guard let folder = ResourceLocator.folder(named: "data", containing: citiesFile) else {
            throw DatasetLoadError.demoNotFound
        }
        var cities = try read(folder + "/" + citiesFile)
        let malls = try read(folder + "/" + mallsFile)
        // Mall rows are numbered after the cities, so both files keep distinct ids.
        let base = (cities.ids.max() ?? 0) + 1
        cities.ids.append(contentsOf: malls.ids.map { base + $0 })
        cities.coordinates.append(contentsOf: malls.coordinates)
        precondition(cities.properties.columns == malls.properties.columns, "demo files share their columns")
        // A `kind` of each point, for the demo page's filter (producers' movers are `vehicle`s).
        cities.properties = Self.adding(kind: "city", to: cities.properties)
        cities.properties.values.append(contentsOf: Self.adding(kind: "shop", to: malls.properties).values)
        return LoadedDataset(name: "geonames-cities+malls", dataset: cities)
    }

    /// The table with a last column `kind` holding `kind` in every row.
    static func adding(kind: String, to table: PropertyTable) -> PropertyTable {
        let width = table.columns.count
        let rows = width == 0 ? 0 : table.values.count / width
        var values: [PropertyValue?] = []
        values.reserveCapacity(rows * (width + 1))
        for r in 0..<rows {
            values.append(contentsOf: table.values[r * width..<(r + 1) * width])
            values.append(.string(kind))
        }
        return PropertyTable(columns: table.columns + ["kind"], values: values)
    }

    /// Reads one of the demo's own files, which have no bad rows.
    static func read(_ path: String) throws -> Dataset {
        try parse(path, badRows: .fail).dataset
    }

    /// Reads one data file, its format told by its extension.
    static func parse(_ path: String, badRows: BadRowPolicy) throws -> ParsedDataset {
        guard let format = DataFormat(fileName: path) else { throw DatasetLoadError.unknownFormat(file: path) }
        // NDJSON, the usual format of very large exports, streams: peak memory stays near the
        // dataset's, where a whole 10M-line file would add 1.4 GB.
        if format == .ndjson { return try streamNDJSON(path, badRows: badRows) }
        let bytes = try FileBytes.read(path)
        do {
            return try DatasetParser.parse(bytes, format: format, badRows: badRows)
        } catch {
            throw DatasetLoadError.badData(file: path, error: error)
        }
    }

    private static func streamNDJSON(_ path: String, badRows: BadRowPolicy) throws -> ParsedDataset {
        var stream: NDJSONStream?
        do {
            try FileBytes.forEachPiece(
                path,
                // Features are rarely under 60 bytes a line; unused capacity is never touched.
                sizeKnown: { stream = NDJSONStream(badRows: badRows, expectedFeatures: $0 / 60) },
                { piece in try stream!.feed(piece) })
            return try stream!.finish()
        } catch let error as DataError {
            throw DatasetLoadError.badData(file: path, error: error)
        }
    }
}
