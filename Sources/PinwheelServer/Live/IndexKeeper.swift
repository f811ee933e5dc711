import Foundation
import Logging
import PinwheelCore
import Synchronization

/// Keeps the index following live data without rebuilding it at every change: the changes since the
/// last full build are laid over it (``ClusterDelta``) and published as a ``LiveClusterIndex`` at
/// every refresh, which costs time in proportion to the changes, not the points. In the background a
/// compaction rebuilds the index whole from a copy of the points, exactly as a fresh build; its thread
/// then lays over it the changes made meanwhile, as long as it is catching up with them, and the new
/// build replaces the old base. After the changes stop, the last compaction leaves exactly a fresh
/// build of the points.
///
/// `pca-tree` has no delta: it is rebuilt whole by the compactions, while sessions use it.
///
/// Index thread only, but for the compaction's own thread, which hands its result over through a
/// lock and wakes the index thread.
final class IndexKeeper: @unchecked Sendable {
    struct Options: Sendable {
        /// Least time between the end of one compaction and the start of the next; at least twice the
        /// last compaction's CPU time is left between them, so compactions take at most a third of a
        /// core. CPU time, not the time it took: on a busy machine a compaction waits for a core, and
        /// spacing them by that wait would let the delta, and every query's cost, grow.
        var compactionInterval: Duration = .seconds(2)
        /// A delta this large is compacted without waiting for the interval.
        var largestDelta = 200_000
    }

    /// What a refresh publishes.
    struct Published {
        var clusterers: [Algorithm: any Clusterer]
        var version: UInt64
        var points: Int
        /// The delta's size (see ``ClusterDelta/size``).
        var delta: Int
        /// A compaction's build time, when this refresh installed one.
        var compaction: Duration?
        /// Where the changes laid over the index happened; nil when the whole index changed (a
        /// compaction), so every view may show something new.
        var footprint: ChangeFootprint?
        /// The changes taken since the last refresh, in order, for the filtered indexes to follow.
        var changes: [ChangedPoint] = []
    }

    private let live: LiveData
    private let options: Options
    private let logger: Logger
    private let clusterOptions: ClusterOptions
    private var delta: ClusterDelta
    /// The version the delta brings its base to.
    private var version: UInt64
    /// True while a compaction runs.
    private var compacting = false
    /// The changes taken while a compaction runs: its thread lays them over its build, and the index
    /// thread the few that came after, when it installs the build.
    private let sinceCompaction = Mutex<[ChangedPoint]?>(nil)
    private var lastCompactionEnd = ContinuousClock.now
    private var lastCompactionCPU: Duration = .zero
    /// The data version `pca-tree` was last built at.
    private var pcaVersion: UInt64
    private let compacted = Mutex<Compaction?>(nil)
    /// Whether the machine is short of cores, and the running compaction's thread while it runs on
    /// idle cores only, to make it yield when the cores run out (``coresJudged(short:)``). One lock, so
    /// a compaction starting while the judgement changes cannot miss it.
    private let idleCompaction = Mutex(IdleCompaction())

    /// A compaction's result: its build with the changes made meanwhile laid over it, or why there is
    /// none.
    private struct Compaction: @unchecked Sendable {
        var delta: ClusterDelta? = nil
        var failure: String? = nil
        var pcaTree: (any Clusterer)? = nil
        var took: Duration = .zero
        /// The compaction thread's CPU time.
        var cpu: Duration = .zero
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
    /// - Parameters:
    ///   - inUse: the algorithms sessions asked for lately.
    ///   - compactionPriority: a new compaction's (``CompactionPriority/starting(coresShort:judged:)``).
    /// - Returns: what to publish; nil when nothing changed.
    func refresh(inUse: Set<Algorithm>, compactionPriority: CompactionPriority) -> Published? {
        var published: [Algorithm: any Clusterer] = [:]
        var installed: Duration?
        if let done = compacted.withLock({ $0.take() }) {
            let rest = sinceCompaction.withLock { taken in
                defer { taken = nil }
                return taken ?? []
            }
            compacting = false
            lastCompactionEnd = .now
            lastCompactionCPU = done.cpu
            guard var next = done.delta else {
                // Nothing to install: the changes stay in the delta, and a later compaction tries again.
                logger.error("compacting the index failed: \(done.failure ?? "unknown error")")
                return nil
            }
            for change in rest { next.apply(change) }
            logger.debug(
                "compaction installed: \(done.took) (\(done.cpu) of CPU), \(rest.count) changes laid at install")
            delta = next
            installed = done.took
            if let tree = done.pcaTree {
                published[.pcaTree] = tree
                pcaVersion = next.base.dataset.version
            }
        }
        let pcaStale = inUse.contains(.pcaTree) && pcaVersion < version
        let wait = max(options.compactionInterval, lastCompactionCPU * 2)
        let due =
            !compacting && (!delta.isEmpty || pcaStale)
            && (ContinuousClock.now - lastCompactionEnd >= wait || delta.size >= options.largestDelta)
        let taken: (version: UInt64, changes: [ChangedPoint])
        if due {
            let (data, changes) = live.datasetTakingChanges()
            taken = (data.version, changes)
            compact(data, pcaTree: inUse.contains(.pcaTree), priority: compactionPriority)
        } else {
            taken = live.takeChanges()
        }
        var footprint = ChangeFootprint()
        let cpuAtStart = ThreadCPUClock.now()
        for change in taken.changes { delta.apply(change, footprint: &footprint) }
        live.ingestCost.record(.index, cpu: ThreadCPUClock.now() - cpuAtStart, changes: taken.changes.count)
        // A compaction that starts now builds from points that include these changes already.
        if compacting && !due { sinceCompaction.withLock { $0?.append(contentsOf: taken.changes) } }
        guard installed != nil || !taken.changes.isEmpty || !published.isEmpty else { return nil }
        version = max(version, taken.version)
        let now = live.publication()
        published[.hierarchical] = LiveClusterIndex(
            delta: delta, version: version, names: now.names, columns: now.columns, pointCount: now.count)
        return Published(
            clusterers: published, version: version, points: now.count, delta: delta.size, compaction: installed,
            footprint: installed == nil ? footprint : nil, changes: taken.changes)
    }

    /// Takes the machine's new judgement: once it is short of cores, a compaction running on idle
    /// cores only would hardly run, so it yields instead; any thread.
    func coresJudged(short: Bool) {
        idleCompaction.withLock { state in
            state.coresShort = short
            if short, let thread = state.thread {
                CompactionPriority.yielding.apply(toThread: thread)
                state.end()
            }
        }
    }

    /// The CPU time compactions have taken on idle cores only, which was the machine's to spare; any
    /// thread.
    var cpuOnIdleCores: Duration { idleCompaction.withLock { $0.spent } }

    /// Starts a full build of `data` on a thread of its own, which then lays over it the changes taken
    /// meanwhile; the next refresh after it installs it.
    private func compact(_ data: Dataset, pcaTree: Bool, priority: CompactionPriority) {
        compacting = true
        sinceCompaction.withLock { $0 = [] }
        let options = clusterOptions
        // The values counted are those chosen at load, so every build's clusters mean the same.
        let contents = delta.base.contents
        let thread = Thread { [self] in
            let priority = idleCompaction.withLock { state in
                let now = state.coresShort ? CompactionPriority.yielding : priority
                now.apply()
                if now == .spareCoresOnly { state.begin() }
                return now
            }
            defer { idleCompaction.withLock { $0.end() } }
            let started = ContinuousClock.now
            let cpuAtStart = ThreadCPUClock.now()
            var result = Compaction()
            do {
                // On spare cores only, on this thread alone: a thread from the shared pool would run at
                // the process's priority. The same split either way, so exactly a fresh build.
                var next = ClusterDelta(
                    base: try ClusterIndex(
                        dataset: data, options: options, contents: contents,
                        concurrently: priority.buildsConcurrently))
                var chase = CompactionChase()
                while true {
                    let batch = sinceCompaction.withLock { taken in
                        defer { taken = [] }
                        return taken ?? []
                    }
                    for change in batch { next.apply(change) }
                    if !chase.continues(after: batch.count) { break }
                }
                result.delta = next
                if pcaTree {
                    result.pcaTree = try ClustererFactory.make(
                        .pcaTree, dataset: data, options: options, contents: contents)
                }
            } catch {
                result.failure = "\(error)"
            }
            result.took = started.duration(to: .now)
            result.cpu = ThreadCPUClock.now() - cpuAtStart
            compacted.withLock { [result] in $0 = result }
            live.wakeIndexThread()
        }
        thread.name = "pinwheel-compaction"
        thread.start()
    }
}
