import Dispatch
import Foundation
import Logging
import PinwheelCore
import Synchronization

/// Who hears that a new index was published.
protocol IndexListeners: AnyObject, Sendable {
    /// Index thread: the index at version `now` replaced the one at `previous`.
    /// - Parameter footprint: where the changes laid over the index happened; nil when the whole index
    ///   changed (a compaction or a rebuild), so every view may show something new.
    func indexPublished(footprint: ChangeFootprint?, previous: UInt64, now: UInt64)
}

/// The index thread of a server whose data changes, and everything it owns. Its loop runs one way:
/// it takes the changes ``LiveData`` applied, lays them over the index or has a compaction rebuild
/// it (``IndexKeeper``; with aggregates, rebuilds the index whole), publishes the result to the
/// sessions' ``ServedClusterers`` and the filtered indexes, tells the ``IndexListeners`` what changed,
/// then judges the machine's cores (``CoreGovernor``) and writes a snapshot when one is due.
///
/// A refresh runs as soon as changes arrived and the last one started at least the refresh interval
/// ago (``RefreshPacing``: longer while viewers' first batches are slow), so a burst of changes costs
/// one refresh, and at least every `idleWake` otherwise (a compaction may be due or done).
///
/// Index thread only, but for ``retire(_:)`` and ``firstBatches``, which any thread may use.
final class IndexPublisher: @unchecked Sendable {
    struct Options: Sendable {
        /// Least time between the starts of two refreshes.
        var refreshInterval: Duration = .milliseconds(100)
        /// Longest time the index thread sleeps without changes.
        var idleWake: Duration = .milliseconds(250)
        /// Views whose first batch takes longer than this count as slow (``RefreshPacing``).
        var slowFirstBatch: Duration = .milliseconds(3)
        /// Whether the index is rebuilt whole at every refresh (with aggregates, which a delta does
        /// not keep), rather than kept by an ``IndexKeeper``.
        var rebuildsWhole = false
        var compaction = IndexKeeper.Options()
    }

    let live: LiveData
    /// Viewports answered since the last refresh, and the slow ones among them; sessions record.
    let firstBatches: FirstBatchTally
    private let options: Options
    private let served: ServedClusterers
    private let filters: FilterRegistry
    private let metrics: ServerMetrics
    private let logger: Logger
    /// Keeps the index following the live points; nil with aggregates (whose index is rebuilt whole
    /// at every refresh).
    private let keeper: IndexKeeper?
    /// Signalled when a record was applied, a compaction finished, or at stop.
    private let wake = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    /// Live indexes sessions stopped serving from since the last refresh (see ``retire(_:)``).
    private let retired = Mutex<[LiveClusterIndex]>([])
    /// The data version of the index published last.
    private var publishedVersion: UInt64
    /// The wait between two refreshes, longer while viewers' first batches are slow.
    private var refreshPacing: RefreshPacing
    /// When to give the allocator's free pages back after a compaction.
    private var allocatorTrim = AllocatorTrim()
    private var governor: CoreGovernor

    /// - Parameters:
    ///   - live: the points and their log; the index served now is a build of its points.
    ///   - served: the clusterers sessions share, which each refresh replaces.
    ///   - workers: made to yield while the machine is short of cores.
    init(
        live: LiveData, served: ServedClusterers, filters: FilterRegistry, workers: Workers, options: Options,
        metrics: ServerMetrics, logger: Logger
    ) {
        self.live = live
        self.served = served
        self.filters = filters
        self.options = options
        self.metrics = metrics
        self.logger = logger
        firstBatches = FirstBatchTally(slowerThan: options.slowFirstBatch)
        refreshPacing = RefreshPacing(shortest: options.refreshInterval)
        governor = CoreGovernor(workers: workers, metrics: metrics, logger: logger)
        let clusterers = served.now
        publishedVersion = clusterers.clusterer(for: served.algorithm).dataset.version
        if !options.rebuildsWhole, let base = clusterers.built(.hierarchical) as? ClusterIndex {
            keeper = IndexKeeper(
                base: base, options: options.compaction, cost: live.ingestCost, logger: logger
            ) { [wake] in wake.signal() }
        } else {
            keeper = nil
        }
        metrics.dataVersionLoaded(publishedVersion)
        metrics.refreshPaced(every: options.refreshInterval)
    }

    /// Starts the index thread.
    /// - Parameter listeners: told of every index published (held weakly).
    func start(telling listeners: any IndexListeners) {
        live.whenApplied { [wake] in wake.signal() }
        let thread = Thread { [self, weak listeners] in
            loop { footprint, previous, now in
                listeners?.indexPublished(footprint: footprint, previous: previous, now: now)
            }
            finished.signal()
        }
        thread.name = "pinwheel-index"
        thread.start()
    }

    /// Stops the index thread, then the live data (which closes the log); any thread, idempotent.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake.signal()
        finished.wait()
        live.stop()
    }

    /// Takes a live index a session stopped serving from, for the index thread to let go of at its
    /// next refresh. The session may hold its last reference, and freeing a live index frees every
    /// node its changes copied, milliseconds of CPU that would delay that session's viewer and the
    /// others waiting for the same worker. Any thread.
    func retire(_ index: LiveClusterIndex) {
        retired.withLock { $0.append(index) }
    }

    private func loop(tell: (ChangeFootprint?, UInt64, UInt64) -> Void) {
        var lastStart = ContinuousClock.now - refreshPacing.interval
        while true {
            _ = wake.wait(timeout: .now() + .nanoseconds(Int(options.idleWake.nanoseconds)))
            if stopping.load(ordering: .acquiring) { return }
            let due = lastStart + refreshPacing.interval
            if due > .now { Thread.sleep(forTimeInterval: Double((due - .now).nanoseconds) / 1e9) }
            // Signals that arrived meanwhile are covered by this refresh.
            while wake.wait(timeout: .now()) == .success {}
            lastStart = .now
            letGoOfRetired()
            if let footprint = refresh() {
                tell(footprint.footprint, footprint.previous, publishedVersion)
            }
            pace()
            if let short = governor.judge(alsoIdle: { keeper?.cpuOnIdleCores ?? .zero }) {
                keeper?.coresJudged(short: short)
            }
            trimAllocator()
            live.snapshotIfDue()
        }
    }

    /// Lets go of the indexes sessions retired: the last reference frees each here.
    private func letGoOfRetired() {
        // Taken out under the lock and let go of outside it.
        var letGo = retired.withLock { taken in
            defer { taken = [] }
            return taken
        }
        letGo.removeAll()
    }

    /// Brings the index up to the data and publishes it.
    /// - Returns: where the changes happened (nil: everywhere) and the version published before;
    ///   nil when nothing was published.
    private func refresh() -> (footprint: ChangeFootprint?, previous: UInt64)? {
        let now = ContinuousClock.now
        let inUse = served.inUse(at: now)
        let previous = publishedVersion
        if let keeper {
            guard let round = keeper.beginRound(inUse: inUse) else { return nil }
            let taken: (version: UInt64, changes: [ChangedPoint])
            if round.compacts {
                let (data, changes) = live.datasetTakingChanges()
                keeper.compact(data, pcaTree: inUse.contains(.pcaTree), priority: governor.compactionPriority)
                taken = (data.version, changes)
            } else {
                taken = live.takeChanges()
            }
            let points = live.publication()
            guard let published = keeper.lay(taken.changes, version: taken.version, round: round, points: points)
            else { return nil }
            served.replace(published.clusterers)
            // Before the sessions hear of it: a filtered session takes up its index's new state.
            filters.refresh(
                changes: published.changes, version: published.version, names: points.names, columns: points.columns)
            metrics.indexServes(
                version: published.version, points: published.points, delta: published.delta,
                took: now.duration(to: .now), rebuilt: published.compaction)
            publishedVersion = published.version
            if published.compaction != nil { allocatorTrim.compacted(at: now) }
            return (published.footprint, previous)
        }
        let (data, changes) = live.datasetTakingChanges()
        filters.refresh(changes: changes, version: data.version, names: data.names, columns: data.properties.columns)
        let clusterers = served.now
        guard data.version != clusterers.clusterer(for: served.algorithm).dataset.version else { return nil }
        do {
            served.replaceAll(with: try clusterers.rebuilt(over: data, algorithms: inUse))
            publishedVersion = data.version
        } catch {
            logger.error("rebuilding the index at version \(data.version) failed: \(error)")
            return nil
        }
        let took = now.duration(to: .now)
        metrics.indexServes(version: data.version, points: data.count, delta: 0, took: took, rebuilt: took)
        allocatorTrim.compacted(at: now)
        return (nil, previous)
    }

    /// Sets the wait before the next refresh from how viewers' first batches fared since the last.
    private func pace() {
        let (answered, slow) = firstBatches.take()
        let before = refreshPacing.interval
        refreshPacing.observe(answered: answered, slow: slow)
        if refreshPacing.interval != before { metrics.refreshPaced(every: refreshPacing.interval) }
    }

    /// Gives the allocator's free pages back to the kernel when a compaction left them.
    private func trimAllocator() {
        guard allocatorTrim.isDue(at: .now) else { return }
        let started = ContinuousClock.now
        AllocatorTrim.trim()
        logger.debug("free memory handed back to the kernel in \(ContinuousClock.now - started)")
    }
}
