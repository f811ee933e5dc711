/// Points to cluster, stored as structure of arrays.
public struct Dataset: Sendable {
    /// Dataset id of each row, below 2^32 (see ``FeatureID``).
    public var ids: [UInt32]
    /// Longitude at 2i, latitude at 2i+1, degrees.
    public var coordinates: [Double]
    /// Other columns of each row.
    public var properties: PropertyTable
    /// The change-log version these points are the state of; 0 for data loaded at start-up and never
    /// changed.
    public var version: UInt64
    /// The names of points producers named by strings, by id (see ``PointKey``).
    public var names: [UInt32: String] = [:]
    /// Per row, the low bits of the version that last set the point's properties; empty for data never
    /// changed. A point's ``Feature/revision``.
    public var revisions: [UInt32] = []

    public init(ids: [UInt32], coordinates: [Double], properties: PropertyTable = PropertyTable(), version: UInt64 = 0)
    {
        precondition(coordinates.count == ids.count * 2, "two coordinates per id")
        self.ids = ids
        self.coordinates = coordinates
        self.properties = properties
        self.version = version
    }

    /// Number of points.
    public var count: Int { ids.count }

    @inlinable public func lon(_ row: Int) -> Double { coordinates[2 * row] }
    @inlinable public func lat(_ row: Int) -> Double { coordinates[2 * row + 1] }

    /// The smallest box holding every point; nil when empty.
    public var bounds: BBox? {
        guard count > 0 else { return nil }
        var box = BBox(west: 180, south: 90, east: -180, north: -90)
        for row in 0..<count {
            box.west = min(box.west, lon(row))
            box.east = max(box.east, lon(row))
            box.south = min(box.south, lat(row))
            box.north = max(box.north, lat(row))
        }
        return box
    }
}

/// Extra columns of a dataset, row-major: row r, column c at `values[r * columns.count + c]`; nil where a
/// point has no value (an empty cell or string, a property another point brought).
public struct PropertyTable: Sendable {
    /// Most columns a table holds: every column costs a cell in every row.
    public static let maxColumns = 256

    public var columns: [String]
    public var values: [PropertyValue?]

    public init(columns: [String] = [], values: [PropertyValue?] = []) {
        self.columns = columns
        self.values = values
    }

    /// The value of a column in a row.
    public func value(row: Int, column: Int) -> PropertyValue? {
        values[row * columns.count + column]
    }
}
