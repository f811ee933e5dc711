/// Builds the clusterer for an algorithm, so callers (server sessions, `pinwheel bench`) pick one by
/// name and a new algorithm is one more case here.
public enum ClustererFactory {
    /// Builds a clusterer over a dataset.
    /// - Parameters:
    ///   - algorithm: which clusterer.
    ///   - dataset: the points.
    ///   - options: clustering options (supercluster names).
    ///   - aggregates: values reduced over every cluster's points.
    ///   - contents: what every cluster counts besides its points.
    /// - Throws: ``IndexError`` for bad options or columns.
    public static func make(
        _ algorithm: Algorithm, dataset: Dataset, options: ClusterOptions = ClusterOptions(),
        aggregates: [Aggregate] = [], contents: ClusterContents = .none
    ) throws(IndexError) -> any Clusterer {
        switch algorithm {
        case .hierarchical:
            return try ClusterIndex(dataset: dataset, options: options, aggregates: aggregates, contents: contents)
        case .pcaTree:
            return try PCATree(dataset: dataset, options: options, aggregates: aggregates, contents: contents)
        }
    }
}
