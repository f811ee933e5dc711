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

    private let options: Options
    /// Where the index thread's share of what changes cost is counted.
    private let cost: IngestCost
    /// Wakes the index thread when a compaction finished.
    private let wake: @Sendable () -> Void
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

    /// - Parameters:
    ///   - base: the full build of the points now.
    ///   - cost: where laying changes is counted (``IngestCost/Stage/index``).
    ///   - wake: wakes the index thread; called on a compaction's thread when it finished.
    init(
        base: ClusterIndex, options: Options, cost: IngestCost, logger: Logger,
        wake: @escaping @Sendable () -> Void
    ) {
        self.options = options
        self.cost = cost
        self.wake = wake
        self.logger = logger
        clusterOptions = base.options
        delta = ClusterDelta(base: base)
        version = base.dataset.version
        pcaVersion = version
    }

    /// What one refresh starts from: a compaction installed, and whether a new one is due.
    struct Round {
        /// A compaction's build time, when this round installed one.
        var installed: Duration?
        /// Rebuilt whole by the compaction installed.
        var pcaTree: (any Clusterer)?
        /// Whether a compaction is due: the changes are then taken with the points they bring the
        /// data to, for ``compact(_:pcaTree:priority:)``.
        var compacts: Bool
    }

    /// Index thread: the first step of a refresh. Installs a compaction that finished (its build with
    /// the changes taken since laid over it) and says whether the next is due.
    /// - Parameter inUse: the algorithms sessions asked for lately.
    /// - Returns: nil when a compaction failed: its changes stay in the delta, a later one tries
    ///   again, and this round publishes nothing.
    func beginRound(inUse: Set<Algorithm>) -> Round? {
        var round = Round(compacts: false)
        if let done = compacted.withLock({ $0.take() }) {
            let rest = sinceCompaction.withLock { taken in
                defer { taken = nil }
                return taken ?? []
            }
            compacting = false
            lastCompactionEnd = .now
            lastCompactionCPU = done.cpu
            guard var next = done.delta else {
                logger.error("compacting the index failed: \(done.failure ?? "unknown error")")
                return nil
            }
            for change in rest { next.apply(change) }
            logger.debug(
                "compaction installed: \(done.took) (\(done.cpu) of CPU), \(rest.count) changes laid at install")
            delta = next
            round.installed = done.took
            if let tree = done.pcaTree {
                round.pcaTree = tree
                pcaVersion = next.base.dataset.version
            }
        }
        let pcaStale = inUse.contains(.pcaTree) && pcaVersion < version
        let wait = max(options.compactionInterval, lastCompactionCPU * 2)
        round.compacts =
            !compacting && (!delta.isEmpty || pcaStale)
            && (ContinuousClock.now - lastCompactionEnd >= wait || delta.size >= options.largestDelta)
        return round
    }

    /// Index thread: the last step of a refresh. Lays the changes taken over the delta and makes the
    /// index to publish.
    /// - Parameters:
    ///   - changes: the changes applied since the last refresh, in order.
    ///   - version: the data version they bring the points to.
    ///   - round: what ``beginRound(inUse:)`` said; when it compacts, ``compact(_:pcaTree:priority:)``
    ///     was started on the points these changes bring the data to.
    ///   - points: what the live index publishes of the points beyond its delta.
    /// - Returns: what to publish; nil when nothing changed.
    func lay(
        _ changes: [ChangedPoint], version taken: UInt64, round: Round,
        points: (names: [UInt32: String], columns: [String], count: Int)
    ) -> Published? {
        var published: [Algorithm: any Clusterer] = [:]
        if let tree = round.pcaTree { published[.pcaTree] = tree }
        var footprint = ChangeFootprint()
        let cpuAtStart = ThreadCPUClock.now()
        for change in changes { delta.apply(change, footprint: &footprint) }
        cost.record(.index, cpu: ThreadCPUClock.now() - cpuAtStart, changes: changes.count)
        // A compaction started this round builds from points that include these changes already.
        if compacting && !round.compacts { sinceCompaction.withLock { $0?.append(contentsOf: changes) } }
        guard round.installed != nil || !changes.isEmpty || !published.isEmpty else { return nil }
        version = max(version, taken)
        published[.hierarchical] = LiveClusterIndex(
            delta: delta, version: version, names: points.names, columns: points.columns, pointCount: points.count)
        return Published(
            clusterers: published, version: version, points: points.count, delta: delta.size,
            compaction: round.installed, footprint: round.installed == nil ? footprint : nil, changes: changes)
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

    /// Index thread: starts a full build of `data` on a thread of its own, which then lays over it the
    /// changes taken meanwhile; the first round after it finished installs it.
    func compact(_ data: Dataset, pcaTree: Bool, priority: CompactionPriority) {
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
            wake()
        }
        thread.name = "pinwheel-compaction"
        thread.start()
    }
}
