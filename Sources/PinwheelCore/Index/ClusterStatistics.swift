/// Size figures a clusterer reports for benchmarks.
public protocol ClusterStatistics {
    /// Items stored per zoom, keyed by zoom.
    var itemsPerZoom: [Int: Int] { get }
    /// Bytes held by the clusterer's own arrays, not counting the dataset.
    var storedBytes: Int { get }
}

extension ClusterIndex: ClusterStatistics {
    public var itemsPerZoom: [Int: Int] {
        Dictionary(uniqueKeysWithValues: levels.map { ($0.zoom, $0.count) })
    }
}
