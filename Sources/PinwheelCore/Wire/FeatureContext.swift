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

}
