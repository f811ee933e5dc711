import Foundation
import Logging
import PinwheelCore
import Synchronization

/// Keeps the index following live data without rebuilding it at every change: the changes since the
/// last full build are laid over it (``ClusterDelta``) and published as a ``LiveClusterIndex`` at
/// every refresh, which costs time in proportion to the changes, not the points. In the background a
/// compaction rebuilds the index whole from a copy of the points, on one thread so the other core
/// stays with the sessions; once it is done, the changes made during it are laid over the new build,
/// which replaces the old base. After the changes stop, the last compaction leaves exactly a fresh
/// build of the points.
///
/// `pca-tree` has no delta: it is rebuilt whole by the compactions, while sessions use it.
///
/// Index thread only, but for the compaction's own thread, which hands its result over through a
/// lock and wakes the index thread.
final class IndexKeeper: @unchecked Sendable {
    struct Options: Sendable {
        /// Least time between the end of one compaction and the start of the next; at least twice the
        /// last compaction's time is left between them, so compaction takes at most a third of a core.
        var compactionInterval: Duration = .seconds(2)
        /// A delta this large is compacted without waiting for the interval.
        var largestDelta = 200_000
    }

    /// What a refresh publishes.
    struct Published {
        var clusterers: [Algorithm: any Clusterer]
        var version: UInt64
        var points: Int
        /// A compaction's build time, when this refresh installed one.
        var compaction: Duration?
        /// Where the changes laid over the index happened; nil when the whole index changed (a
        /// compaction), so every view may show something new.
        var footprint: ChangeFootprint?
    }

    private let live: LiveData
    private let options: Options
    private let logger: Logger
    private let clusterOptions: ClusterOptions
    private var delta: ClusterDelta
    /// The version the delta brings its base to.
    private var version: UInt64
    /// The changes taken while a compaction runs, laid over its build when it is done.
    private var sinceCompaction: [ChangedPoint]?
    private var lastCompactionEnd = ContinuousClock.now
    private var lastCompactionTook: Duration = .zero
    /// The data version `pca-tree` was last built at.
    private var pcaVersion: UInt64
    private let compacted = Mutex<Compaction?>(nil)

    /// A compaction's result: its build, or why there is none.
    private struct Compaction: @unchecked Sendable {
        var base: ClusterIndex? = nil
        var failure: String? = nil
        var pcaTree: (any Clusterer)? = nil
        var took: Duration
    }

    /// - Parameter base: the full build of the points `live` holds now.
    init(live: LiveData, base: ClusterIndex, options: Options, logger: Logger) {
        self.live = live
        self.options = options
        self.logger = logger
        clusterOptions = base.options
        delta = ClusterDelta(base: base)
        version = base.dataset.version
        pcaVersion = version
    }

    /// Index thread: takes the changes applied since the last refresh, lays them over the base (the
    /// new base, when a compaction finished), and starts a compaction when one is due.
    /// - Parameter inUse: the algorithms sessions asked for lately.
    /// - Returns: what to publish; nil when nothing changed.
    func refresh(inUse: Set<Algorithm>) -> Published? {
        var published: [Algorithm: any Clusterer] = [:]
        var installed: Duration?
        if let done = compacted.withLock({ $0.take() }) {
            guard let base = done.base else {
                // Nothing to install: the changes stay in the delta, and a later compaction tries again.
                logger.error("compacting the index failed: \(done.failure ?? "unknown error")")
                sinceCompaction = nil
                lastCompactionEnd = .now
                return nil
            }
            var next = ClusterDelta(base: base)
            for change in sinceCompaction ?? [] { next.apply(change) }
            delta = next
            sinceCompaction = nil
            lastCompactionEnd = .now
            lastCompactionTook = done.took
            installed = done.took
            if let tree = done.pcaTree {
                published[.pcaTree] = tree
                pcaVersion = base.dataset.version
            }
        }
        let pcaStale = inUse.contains(.pcaTree) && pcaVersion < version
        let wait = max(options.compactionInterval, lastCompactionTook * 2)
        let due =
            sinceCompaction == nil && (!delta.isEmpty || pcaStale)
            && (ContinuousClock.now - lastCompactionEnd >= wait || delta.size >= options.largestDelta)
        let taken: (version: UInt64, changes: [ChangedPoint])
        if due {
            let (data, changes) = live.datasetTakingChanges()
            taken = (data.version, changes)
            compact(data, pcaTree: inUse.contains(.pcaTree))
        } else {
            taken = live.takeChanges()
        }
        var footprint = ChangeFootprint()
        for change in taken.changes { delta.apply(change, footprint: &footprint) }
        if sinceCompaction != nil { sinceCompaction!.append(contentsOf: taken.changes) }
        guard installed != nil || !taken.changes.isEmpty || !published.isEmpty else { return nil }
        version = max(version, taken.version)
        let now = live.publication()
        published[.hierarchical] = LiveClusterIndex(
            delta: delta, version: version, names: now.names, columns: now.columns, pointCount: now.count)
        return Published(
            clusterers: published, version: version, points: now.count, compaction: installed,
            footprint: installed == nil ? footprint : nil)
    }

    /// Starts a full build of `data` on a thread of its own; the next refresh after it installs it.
    private func compact(_ data: Dataset, pcaTree: Bool) {
        sinceCompaction = []
        let options = clusterOptions
        let thread = Thread { [self] in
            let started = ContinuousClock.now
            var result = Compaction(took: .zero)
            do {
                // One thread: the other core serves the sessions meanwhile.
                result.base = try ClusterIndex(dataset: data, options: options, aggregates: [], parallelFrom: .max)
                if pcaTree { result.pcaTree = try ClustererFactory.make(.pcaTree, dataset: data, options: options) }
            } catch {
                result.failure = "\(error)"
            }
            result.took = started.duration(to: .now)
            compacted.withLock { [result] in $0 = result }
            live.wakeIndexThread()
        }
        thread.name = "pinwheel-compaction"
        thread.start()
    }
}
