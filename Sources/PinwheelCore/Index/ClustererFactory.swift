/// Builds the clusterer for an algorithm, so callers (server sessions, `pinwheel bench`) pick one by
/// name and a new algorithm is one more case here.
public enum ClustererFactory {
    /// Builds a clusterer over a dataset.
    /// - Parameters:
    ///   - algorithm: which clusterer.
    ///   - dataset: the points.
    ///   - options: clustering options (supercluster names).
    ///   - sumColumns: numeric columns to sum into clusters.
    /// - Throws: ``IndexError`` for bad options or columns.
    public static func make(
        _ algorithm: Algorithm, dataset: Dataset, options: ClusterOptions = ClusterOptions(), sumColumns: [String] = []
    ) throws(IndexError) -> any Clusterer {
        switch algorithm {
        case .hierarchical:
            return try ClusterIndex(dataset: dataset, options: options, sumColumns: sumColumns)
        case .pcaTree:
            return try PCATree(dataset: dataset, options: options, sumColumns: sumColumns)
        }
    }
}
