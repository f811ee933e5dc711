/// What a feature's wire form needs beyond the ``Feature`` itself: the dataset's property columns for
/// points and the aggregated sums for clusters.
public struct FeatureContext: Sendable {
    /// Columns of points' `properties`, looked up by ``Feature/row``.
    public var properties: PropertyTable
    /// Names of the summed columns, the keys of a cluster's `sums`; empty means no `sums`.
    public var sumColumns: [String]
    /// The sums of a cluster, in ``sumColumns`` order.
    public var sums: @Sendable (Feature) -> ArraySlice<Double>

    public init(
        properties: PropertyTable = PropertyTable(), sumColumns: [String] = [],
        sums: @escaping @Sendable (Feature) -> ArraySlice<Double> = { _ in [] }
    ) {
        self.properties = properties
        self.sumColumns = sumColumns
        self.sums = sums
    }

    /// Properties and sums as a clusterer provides them.
    public init(clusterer: some Clusterer) {
        self.init(
            properties: clusterer.dataset.properties, sumColumns: clusterer.sumColumns,
            sums: { clusterer.sums(of: $0) })
    }
}
