/// What a feature's wire form needs beyond the ``Feature`` itself: the dataset's property columns for
/// points and the aggregate values for clusters.
public struct FeatureContext: Sendable {
    /// Columns of points' `properties`, looked up by ``Feature/row``.
    public var properties: PropertyTable
    /// Rows from `changedRows.start` on: points a live index added since its base was built.
    public var changedRows: ChangedRows?
    /// The names of points producers named by strings, by id; written as a point's `key`.
    public var names: [UInt32: String] = [:]
    /// The aggregates, the keys of a cluster's `aggregates`; empty means no `aggregates`.
    public var aggregates: [Aggregate]
    /// The reduced values of a cluster, in ``aggregates`` order (see ``Clusterer/aggregateValues(of:)``).
    public var values: @Sendable (Feature) -> ArraySlice<Double>

    public init(
        properties: PropertyTable = PropertyTable(), aggregates: [Aggregate] = [],
        values: @escaping @Sendable (Feature) -> ArraySlice<Double> = { _ in [] }
    ) {
        self.properties = properties
        self.aggregates = aggregates
        self.values = values
    }

    /// Properties and aggregate values as a clusterer provides them.
    public init(clusterer: some Clusterer) {
        self.init(
            properties: clusterer.dataset.properties, aggregates: clusterer.aggregates,
            values: { clusterer.aggregateValues(of: $0) })
        names = clusterer.dataset.names
        changedRows = clusterer.changedRows
    }

    /// The name a producer gave a point (its `key`); nil for clusters and unnamed points.
    @inlinable public func key(of f: Feature) -> String? {
        guard f.isPoint, !names.isEmpty, f.id <= UInt32.max else { return nil }
        return names[UInt32(f.id)]
    }

    /// A point's property columns and its values in column order, nil for a cluster or a point
    /// without any. Both encoders leave missing values out, and values past the last column.
    public func properties(of f: Feature) -> (columns: [String], values: ArraySlice<PropertyValue?>)? {
        guard f.isPoint else { return nil }
        if let changedRows, f.row >= changedRows.start {
            return (changedRows.columns, changedRows.values(UInt32(truncatingIfNeeded: f.id))[...])
        }
        let width = properties.columns.count
        guard width > 0 && Int(f.row) * width < properties.values.count else { return nil }
        return (properties.columns, properties.values[Int(f.row) * width..<(Int(f.row) + 1) * width])
    }

    /// The value of aggregate `c` of a cluster whose reduced values are `reduced`; NaN when no point had
    /// one (a `min` or `max` over points that all lack the column), sent as `null`.
    @inlinable public func aggregate(_ c: Int, reduced: ArraySlice<Double>, count: UInt32) -> Double {
        let i = reduced.startIndex + c
        return aggregates[c].value(reduced: i < reduced.endIndex ? reduced[i] : .nan, count: count)
    }
}
