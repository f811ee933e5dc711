import PinwheelCore

/// One clusterer per algorithm for the whole server, built once at start-up and shared by every
/// session (clusterers are immutable and safe to query from many threads), so a session's
/// `settings` switch costs nothing.
public struct Clusterers: Sendable {
    private var byAlgorithm: [Algorithm: any Clusterer]
    /// The options `hello` announces.
    public let options: HelloMessage.Options
    private let clusterOptions: ClusterOptions
    private let aggregates: [Aggregate]
    /// What every cluster counts besides its points, fixed at load for every later build.
    public let contents: ClusterContents

    /// Builds every algorithm's clusterer with `clusterOptions` and the same `aggregates` and `contents`.
    /// - Throws: the core's build error (a bad option, an unknown aggregate column, too many points),
    ///   naming what was wrong.
    public init(
        dataset: Dataset, options clusterOptions: ClusterOptions = ClusterOptions(), aggregates: [Aggregate] = [],
        contents: ClusterContents = .none
    )
        throws
    {
        var built: [Algorithm: any Clusterer] = [:]
        for algorithm in Algorithm.allCases {
            built[algorithm] = try ClustererFactory.make(
                algorithm, dataset: dataset, options: clusterOptions, aggregates: aggregates, contents: contents)
        }
        byAlgorithm = built
        self.clusterOptions = clusterOptions
        self.aggregates = aggregates
        self.contents = contents
        options = HelloMessage.Options(
            minZoom: clusterOptions.minZoom, maxZoom: clusterOptions.maxZoom, minPoints: clusterOptions.minPoints,
            radius: clusterOptions.radius, extent: Int(clusterOptions.extent),
            spread: clusterOptions.spread.rawValue, maxClusters: clusterOptions.maxClusters)
    }

    /// These clusterers with `algorithms` rebuilt over newer data; the others stay as they were until
    /// they are rebuilt in their turn.
    /// - Throws: the core's build error (too many points).
    public func rebuilt(over dataset: Dataset, algorithms: some Sequence<Algorithm>) throws -> Clusterers {
        var next = self
        for algorithm in algorithms {
            next.byAlgorithm[algorithm] = try ClustererFactory.make(
                algorithm, dataset: dataset, options: clusterOptions, aggregates: aggregates, contents: contents)
        }
        return next
    }

    /// These clusterers with some replaced (a live index, a compaction's build).
    public func replacing(_ clusterers: [Algorithm: any Clusterer]) -> Clusterers {
        var next = self
        next.byAlgorithm.merge(clusterers) { $1 }
        return next
    }

    /// The shared clusterer of an algorithm.
    public func clusterer(for algorithm: Algorithm) -> any Clusterer {
        byAlgorithm[algorithm]!
    }
}
