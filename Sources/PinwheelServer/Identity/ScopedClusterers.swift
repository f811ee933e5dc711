import PinwheelCore
import Synchronization

/// Clusterers over only the points a scope allows, one set per distinct effective filter, shared by
/// the sessions with that filter and rebuilt when the data has changed since: a scoped session's
/// counts, positions and aggregates are those of a server holding just its points, so nothing of
/// another tenant reaches it, not even as a count.
final class ScopedClusterers: Sendable {
    private struct Entry {
        var version: UInt64
        var clusterers: Clusterers
    }

    private let options: ClusterOptions
    private let aggregates: [Aggregate]
    private let entries = Mutex<[String: Entry]>([:])

    init(options: ClusterOptions, aggregates: [Aggregate]) {
        self.options = options
        self.aggregates = aggregates
    }

    /// The clusterer of `algorithm` over `data`'s points that `filter` lets through, built when the
    /// cached one is of another version. Any thread.
    /// - Parameter data: the points now, read only when a build is due.
    func clusterer(
        filter: EffectiveFilter, algorithm: Algorithm, version: UInt64, data: () -> Dataset
    ) -> any Clusterer {
        if let entry = entries.withLock({ $0[filter.key] }), entry.version == version {
            return entry.clusterers.clusterer(for: algorithm)
        }
        let subset = filter.expression.map { data().filtered(by: $0) } ?? data()
        // A build over a subset of points that built whole cannot fail on its options or columns.
        let built = (try? Clusterers(dataset: subset, options: options, aggregates: aggregates))!
        entries.withLock { $0[filter.key] = Entry(version: version, clusterers: built) }
        return built.clusterer(for: algorithm)
    }
}
