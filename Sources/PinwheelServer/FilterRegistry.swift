import Dispatch
import Foundation
import PinwheelCore
import Synchronization

/// The indexes of filtered views, one per effective filter (by its canonical key), shared by every
/// session with that filter: built on demand by the first session that asks (on its worker, never the
/// service thread: a session with a filter takes its turns on the workers), kept while sessions use
/// them, let go of least recently used first once unused indexes hold more than the memory budget.
/// An index asked for or let go of within a grace period stays: a session takes hold of its filter's
/// index at the end of the turn that asked for it, and one let go of then would be built again at its
/// next ask, and no longer follow the changes meanwhile.
///
/// The budget bounds the indexes in use too: before an index of a filter (or an algorithm) it does
/// not hold is built, its points are counted and its bytes estimated; when the indexes in use plus the
/// estimate would not fit once unused ones are let go of, it is refused (``FilterRefusal``) and nothing
/// changes (``FilterAdmission``). A build the registry already admitted (a `pca-tree` built again
/// after the data changed, a compaction) replaces what it held and is not asked again. To make room,
/// an unused index may go within its grace, unless a session asked for it since the last let go of it.
///
/// With live data each `hierarchical` index follows the changes exactly as the full index does: at
/// every refresh the index thread lays the same changes over it (a point that stops passing the
/// filter leaves it, one that starts passing enters it) and publishes a ``LiveClusterIndex``; once its
/// delta grows past a quarter of its points it is built again from the points in the background. A
/// filtered `pca-tree` is built again when a session asks for it after the data changed.
///
/// Any thread; the builds run outside the lock, one per filter at a time.
final class FilterRegistry: @unchecked Sendable {
    /// Where filtered indexes get their points: the data now, and whether it changes.
    struct Source: Sendable {
        /// The points passing a filter now, copied out of the data. Live data copies them under its
        /// table's lock: a snapshot of the table held through a build would have its next change copy
        /// the whole table.
        var points: @Sendable (FilterExpression) -> Dataset
        /// The full index of an algorithm (when built, else the default one), whose bytes per point
        /// estimate a filtered index's before it is built.
        var full: @Sendable (Algorithm) -> any Clusterer
        var live: Bool
        var options: ClusterOptions
        var aggregates: [Aggregate]
    }

    private final class Entry: @unchecked Sendable {
        let filter: FilterExpression
        /// Guards one build at a time; sessions asking meanwhile wait for it.
        let building = Mutex(())
        var clusterers: [Algorithm: any Clusterer] = [:]
        /// The live index's changes since its base (live data only).
        var delta: ClusterDelta?
        /// Counts the builds that replaced `delta`, so changes laid outside the lock over an older
        /// one are not published over a newer build.
        var generation = 0
        /// Changes the index thread handed over while a build ran, laid over the build when it ends.
        var pending: [ChangedPoint]?
        var sessions = 0
        var lastUsed = ContinuousClock.now
        /// When a session last asked for one of its indexes, and when one last let go of it: one asked
        /// for since is about to be taken hold of.
        var lastAsked = ContinuousClock.now
        var lastReleased = ContinuousClock.now - .seconds(1_000_000)
        /// Roughly what each algorithm's index holds; while an admitted build runs, its estimate.
        var sizes: [Algorithm: Int] = [:]
        /// The algorithms whose first build the budget admitted: later builds of them are not asked again.
        var admitted: Set<Algorithm> = []
        /// Admitted builds running now: the entry is not let go of meanwhile.
        var buildsRunning = 0
        var bytes: Int { sizes.values.reduce(0, +) }
        var compacting = false

        init(filter: FilterExpression) { self.filter = filter }
    }

    private let source: Source
    private let budget: Int
    private let grace: Duration
    /// Indexes built since the start, compactions included.
    private let builds = Atomic<Int>(0)
    /// One build a session waits for at a time (each spreads over the cores): new filters arriving
    /// together would otherwise each take a thread, their points' memory and the live table's lock at
    /// once. Compactions, which no one waits for, go one at a time apart, so that a never-seen filter
    /// does not wait behind one.
    private let oneBuild = DispatchSemaphore(value: 1)
    private let oneCompaction = DispatchSemaphore(value: 1)
    private let entries = Mutex<[String: Entry]>([:])
    /// Indexes refused for want of memory, since start.
    private let refusals = Atomic<Int>(0)
    /// The property columns as of the last refresh (columns only ever grow), under `entries`' lock.
    private var columnsNow: [String] = []

    init(source: Source, budget: Int, grace: Duration = .seconds(10)) {
        self.source = source
        self.budget = budget
        self.grace = grace
    }

    /// Filtered indexes held now, and their bytes.
    var held: (count: Int, bytes: Int) {
        entries.withLock { e in (e.count, e.values.reduce(0) { $0 + $1.bytes }) }
    }

    /// Filtered indexes some session uses now.
    var inUse: Int {
        entries.withLock { e in e.values.count { $0.sessions > 0 } }
    }

    /// Indexes refused for want of memory since start.
    var refused: Int { refusals.load(ordering: .relaxed) }

    /// The registry's figures in Prometheus' text format, appended to `/metrics`, with the full index's
    /// estimated bytes (`full`) to weigh a filtered index against its share of them.
    func metricsText(full: any Clusterer) -> String {
        let (count, bytes) = held
        let used = inUse
        let points = entries.withLock { e in
            e.values.reduce(0) { total, entry in
                total + ((entry.clusterers[.hierarchical] ?? entry.clusterers[.pcaTree])?.pointCount ?? 0)
            }
        }
        return """
            # HELP pinwheel_filter_indexes Indexes of filtered views held, one per effective filter.
            # TYPE pinwheel_filter_indexes gauge
            pinwheel_filter_indexes \(count)
            # HELP pinwheel_filter_indexes_in_use Indexes of filtered views some session uses now (never let go of).
            # TYPE pinwheel_filter_indexes_in_use gauge
            pinwheel_filter_indexes_in_use \(used)
            # HELP pinwheel_filter_refusals_total Filters (or a filtered view's algorithm, or a token's scope) refused since start: their index would have taken the indexes in use past --filter-memory.
            # TYPE pinwheel_filter_refusals_total counter
            pinwheel_filter_refusals_total \(refused)
            # HELP pinwheel_filter_index_bytes Estimated bytes the indexes of filtered views hold (their arrays and their points'), against --filter-memory.
            # TYPE pinwheel_filter_index_bytes gauge
            pinwheel_filter_index_bytes \(bytes)
            # HELP pinwheel_filter_index_builds_total Indexes of filtered views built, first builds and compactions.
            # TYPE pinwheel_filter_index_builds_total counter
            pinwheel_filter_index_builds_total \(builds.load(ordering: .relaxed))
            # HELP pinwheel_filter_index_points Points the indexes of filtered views hold.
            # TYPE pinwheel_filter_index_points gauge
            pinwheel_filter_index_points \(points)
            # HELP pinwheel_index_bytes Estimated bytes the full index holds, as a filtered view's are estimated.
            # TYPE pinwheel_index_bytes gauge
            pinwheel_index_bytes \(full.estimatedBytes)
            # HELP pinwheel_index_points Points the full index holds.
            # TYPE pinwheel_index_points gauge
            pinwheel_index_points \(full.pointCount)

            """
    }

    /// A session starts using `filter`'s index (its first ask builds it).
    func acquire(_ filter: EffectiveFilter) {
        guard let expression = filter.expression else { return }
        entries.withLock { e in
            let entry = e[filter.key] ?? Entry(filter: expression)
            entry.sessions += 1
            entry.lastUsed = .now
            e[filter.key] = entry
        }
    }

    /// A session stops using `filter`'s index; unused indexes past the budget are let go of.
    func release(_ filter: EffectiveFilter) {
        guard !filter.isEverything else { return }
        var letGo: [Entry] = []
        entries.withLock { e in
            if let entry = e[filter.key] {
                entry.sessions -= 1
                entry.lastUsed = .now
                entry.lastReleased = entry.lastUsed
            }
            letGo = evict(&e)
        }
        // Freed here, outside the lock.
        letGo.removeAll()
    }

    /// The index of `algorithm` over the points `filter` lets through when it is built; nil when asking
    /// ``clusterer(for:filter:)`` would build it or wait for its build.
    func built(_ algorithm: Algorithm, filter: EffectiveFilter) -> (any Clusterer)? {
        entries.withLock { e in
            guard let entry = e[filter.key], let index = entry.clusterers[algorithm] else { return nil }
            entry.lastUsed = .now
            entry.lastAsked = entry.lastUsed
            return index
        }
    }

    /// The index of `algorithm` over the points `filter` lets through, built now when there is none.
    /// - Throws: ``FilterRefusal`` when a new index would not fit in the budget; the core's build error.
    func clusterer(for algorithm: Algorithm, filter: EffectiveFilter) throws -> any Clusterer {
        guard let expression = filter.expression else { preconditionFailure("no filter: the full index serves") }
        while true {
            let entry = entries.withLock { e in
                let entry = e[filter.key] ?? Entry(filter: expression)
                entry.lastUsed = .now
                entry.lastAsked = entry.lastUsed
                e[filter.key] = entry
                return entry
            }
            let served: (any Clusterer)? = try entry.building.withLock { _ in
                let (current, built, admitted) = entries.withLock { e in
                    (e[filter.key] === entry, entry.clusterers[algorithm], entry.admitted.contains(algorithm))
                }
                // Let go of (or refused) while this waited for another's build: asked again below.
                guard current else { return nil }
                if let built { return built }
                let index = try build(entry, key: filter.key, algorithm: algorithm, admitting: !admitted)
                var letGo: [Entry] = []
                // The estimate may fall short: unused indexes go to bring the total back within the budget.
                entries.withLock { e in letGo = evict(&e) }
                letGo.removeAll()
                return index
            }
            if let served { return served }
        }
    }

    /// Builds `entry`'s index of `algorithm` from the data now; `admitting` a first build, only once
    /// the budget admits it. A session asking holds `entry.building`; a `compaction` (no one waits for
    /// it) waits only for other compactions.
    private func build(
        _ entry: Entry, key: String, algorithm: Algorithm, admitting: Bool, compaction: Bool = false
    ) throws -> any Clusterer {
        let gate = compaction ? oneCompaction : oneBuild
        gate.wait()
        defer { gate.signal() }
        let tracksChanges = source.live && algorithm == .hierarchical
        // Registered before the points are read: changes taken meanwhile are laid over the build,
        // and those the points already hold change nothing when laid again.
        if tracksChanges { entries.withLock { _ in entry.pending = [] } }
        let data = source.points(entry.filter)
        let index: any Clusterer
        do {
            if admitting { try admit(entry, key: key, algorithm: algorithm, points: data.count) }
            builds.add(1, ordering: .relaxed)
            index = try ClustererFactory.make(
                algorithm, dataset: data, options: source.options, aggregates: source.aggregates)
        } catch {
            entries.withLock { _ in
                if tracksChanges { entry.pending = nil }
                if admitting && entry.admitted.contains(algorithm) {
                    // Admitted, then failed: its reservation goes, and the next ask is admitted anew.
                    entry.buildsRunning -= 1
                    entry.sizes[algorithm] = nil
                    entry.admitted.remove(algorithm)
                }
            }
            throw error
        }
        defer { if admitting { entries.withLock { _ in entry.buildsRunning -= 1 } } }
        entries.withLock { _ in
            var served = index
            if tracksChanges, let base = index as? ClusterIndex {
                var delta = ClusterDelta(base: base)
                let columns =
                    columnsNow.count > data.properties.columns.count ? columnsNow : data.properties.columns
                let bound = BoundFilter(entry.filter, columns: columns)
                for change in entry.pending ?? [] where change.concerns(bound) {
                    delta.apply(change.filtered(by: bound))
                }
                entry.pending = nil
                entry.delta = delta
                entry.generation += 1
                served = LiveClusterIndex(
                    delta: delta, version: data.version, names: data.names, columns: data.properties.columns,
                    pointCount: delta.pointCount)
            }
            entry.clusterers[algorithm] = served
            entry.sizes[algorithm] = served.estimatedBytes
        }
        return entries.withLock { _ in entry.clusterers[algorithm]! }
    }

    /// Index thread: lays the changes a refresh took over every filtered index that follows them, and
    /// publishes each anew.
    /// - Parameters:
    ///   - changes: the changes the full index took, in order.
    ///   - version: the data version they bring it to.
    ///   - names: the names of points producers named by strings, now.
    ///   - columns: the property columns now.
    func refresh(changes: [ChangedPoint], version: UInt64, names: [UInt32: String], columns: [String]) {
        guard !changes.isEmpty else { return }
        // Taken under the lock, laid outside it: sessions asking for their filter's index never wait
        // for the changes to be laid over every other filter's.
        let following: [(entry: Entry, delta: ClusterDelta, generation: Int)] = entries.withLock { e in
            columnsNow = columns
            return e.values.compactMap { entry in
                if entry.pending != nil { entry.pending?.append(contentsOf: changes) }
                // Rebuilt on the next ask: it does not follow changes.
                entry.clusterers[.pcaTree] = nil
                entry.sizes[.pcaTree] = nil
                return entry.delta.map { (entry, $0, entry.generation) }
            }
        }
        // The filters' indexes are laid over side by side: together they hold many times the points
        // of the full index, and the sessions viewing through them wait for the slowest.
        let compactions = Mutex<[Entry]>([])
        DispatchQueue.concurrentPerform(iterations: following.count) { i in
            let (entry, before, generation) = following[i]
            var delta = before
            let bound = BoundFilter(entry.filter, columns: columns)
            for change in changes where change.concerns(bound) { delta.apply(change.filtered(by: bound)) }
            let published = LiveClusterIndex(
                delta: delta, version: version, names: names, columns: columns, pointCount: delta.pointCount)
            let compacts = entries.withLock { _ in
                // A build that ended meanwhile already holds these changes (they were pending).
                guard entry.generation == generation else { return false }
                entry.delta = delta
                entry.clusterers[.hierarchical] = published
                guard !entry.compacting, delta.size > max(1_000, delta.base.dataset.count / 4) else { return false }
                entry.compacting = true
                return true
            }
            if compacts { compactions.withLock { $0.append(entry) } }
        }
        for entry in compactions.withLock({ $0 }) {
            // The index it replaces serves, and follows the changes, until the build is in.
            DispatchQueue.global(qos: .utility).async { [self] in
                _ = try? build(
                    entry, key: entry.filter.key, algorithm: .hierarchical, admitting: false, compaction: true)
                entries.withLock { _ in entry.compacting = false }
            }
        }
    }

    /// Admits the first build of `entry`'s index of `algorithm`, over `points` points, when it fits in
    /// the budget: lets go of the unused indexes that must go and reserves its estimate until the build
    /// replaces it with its bytes. A refused entry no session holds is dropped.
    /// - Throws: ``FilterRefusal`` when it does not fit.
    private func admit(_ entry: Entry, key: String, algorithm: Algorithm, points: Int) throws(FilterRefusal) {
        let full = source.full(algorithm)
        let estimate = FilterAdmission.estimate(
            algorithm: algorithm, points: points, fullBytes: full.estimatedBytes, fullPoints: full.pointCount)
        var letGo: [Entry] = []
        let decision = entries.withLock { e in
            let graceEnded = ContinuousClock.now - grace
            let held = e.map { other, held in
                // An index asked for since its last session let go of it is about to be taken hold of
                // (at the end of the asking turn): it stays through its grace. One let go of since may go.
                let awaitsHold = held.lastAsked > held.lastReleased && held.lastAsked > graceEnded
                return FilterAdmission.Held(
                    key: other, bytes: held.bytes,
                    inUse: held.sessions > 0 || held.buildsRunning > 0 || held === entry || awaitsHold,
                    lastUsed: held.lastUsed)
            }
            let decision = FilterAdmission.decide(estimate: estimate, budget: budget, held: held)
            switch decision {
            case .admit(let keys):
                for other in keys { letGo.append(e.removeValue(forKey: other)!) }
                entry.sizes[algorithm] = estimate
                entry.admitted.insert(algorithm)
                entry.buildsRunning += 1
            case .refuse:
                if entry.sessions <= 0 && entry.clusterers.isEmpty && entry.buildsRunning <= 0 { e[key] = nil }
            }
            return decision
        }
        // Freed here, outside the lock.
        letGo.removeAll()
        if case .refuse(let inUse) = decision {
            refusals.add(1, ordering: .relaxed)
            throw FilterRefusal(points: points, estimate: estimate, inUse: inUse, budget: budget)
        }
    }

    /// Lets go of unused indexes past their grace, least recently used first, while all of them hold
    /// more than the budget.
    private func evict(_ e: inout [String: Entry]) -> [Entry] {
        var total = e.values.reduce(0) { $0 + $1.bytes }
        guard total > budget else { return [] }
        var letGo: [Entry] = []
        let graceEnded = ContinuousClock.now - grace
        for (key, entry) in e.sorted(by: { $0.value.lastUsed < $1.value.lastUsed })
        where entry.sessions <= 0 && entry.buildsRunning <= 0 && entry.lastUsed <= graceEnded {
            guard total > budget else { break }
            total -= entry.bytes
            letGo.append(entry)
            e[key] = nil
        }
        return letGo
    }
}
