import PinwheelCore

/// One clusterer per algorithm for the whole server, built once at start-up and shared by every
/// session (clusterers are immutable and safe to query from many threads), so a session's
/// `settings` switch costs nothing.
public struct Clusterers: Sendable {
    private let byAlgorithm: [Algorithm: any Clusterer]
    /// The options `hello` announces.
    public let options: HelloMessage.Options

    /// Builds every algorithm's clusterer with `clusterOptions` and the same `aggregates`.
    /// - Throws: the core's build error (a bad option, an unknown aggregate column, too many points),
    ///   naming what was wrong.
    public init(
        dataset: Dataset, options clusterOptions: ClusterOptions = ClusterOptions(), aggregates: [Aggregate] = []
    )
        throws
    {
        var built: [Algorithm: any Clusterer] = [:]
        for algorithm in Algorithm.allCases {
            built[algorithm] = try ClustererFactory.make(
                algorithm, dataset: dataset, options: clusterOptions, aggregates: aggregates)
        }
        byAlgorithm = built
        options = HelloMessage.Options(
            minZoom: clusterOptions.minZoom, maxZoom: clusterOptions.maxZoom, minPoints: clusterOptions.minPoints,
            radius: clusterOptions.radius, extent: Int(clusterOptions.extent), nodeSize: clusterOptions.nodeSize,
            spread: clusterOptions.spread.rawValue, maxClusters: clusterOptions.maxClusters)
    }

    /// The shared clusterer of an algorithm.
    public func clusterer(for algorithm: Algorithm) -> any Clusterer {
        byAlgorithm[algorithm]!
    }
}
