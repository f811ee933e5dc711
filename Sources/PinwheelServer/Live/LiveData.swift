import Dispatch
import Foundation
import Logging
import PinwheelCore
import Synchronization

/// The points of a server whose data changes: the table producers edit and the change log that keeps
/// every accepted change.
///
/// Every applied change is also kept as a ``ChangedPoint`` until the index thread takes it
/// (``takeChanges()``, by ``IndexPublisher``), which is told of each applied record
/// (``whenApplied(_:)``). Every `snapshotEvery` changes the table is written to the log as a
/// snapshot, so a restart replays at most that many.
final class LiveData: @unchecked Sendable {
    struct Options: Sendable {
        /// Changes between two snapshots.
        var snapshotEvery: UInt64 = 1_000_000
    }

    let log: any ChangeLog
    let options: Options
    /// What applying and indexing changes costs, for producers' share of the CPU.
    let ingestCost = IngestCost()
    /// The points, and the changes applied since the index thread last took them.
    private let state: Mutex<(table: PointTable, changed: [ChangedPoint])>
    /// Changes dropped because the point held a newer observation.
    private let stale = Mutex(StaleVersions())
    private let logger: Logger
    /// Told on the log thread when a record was applied.
    private let applied = Mutex<(@Sendable () -> Void)?>(nil)
    private let stopping = Atomic<Bool>(false)
    private let snapshots = DispatchQueue(label: "pinwheel-snapshot")
    /// Index thread only: the version of the last snapshot asked for.
    private var snapshotVersion: UInt64 = 0

    /// Loads the log's newest snapshot (or `initial` when the log has none, which is then written as
    /// the first snapshot) and replays the changes after it.
    /// - Throws: ``ChangeLogError`` when the log cannot be read, or its snapshot is damaged.
    init(log: any ChangeLog, initial: @autoclosure () throws -> Dataset, options: Options, logger: Logger) throws {
        self.log = log
        self.options = options
        self.logger = logger
        let start: PointTable
        if let snapshot = try log.latestSnapshot() {
            start = try PointTable(snapshot: snapshot.bytes)
        } else {
            start = PointTable(try initial())
            try log.saveSnapshot(LogSnapshot(version: 0, bytes: start.snapshotBytes()))
        }
        snapshotVersion = start.dataset.version
        state = Mutex((start, []))
        let replayed = try log.open(after: start.dataset.version) { [unowned self] committed in
            apply(committed)
        }
        // The index is built from the replayed points: the replay is no change to lay over it.
        state.withLock { $0.changed.removeAll() }
        logger.info("data at version \(replayed): \(self.state.withLock { $0.table.count }) points")
    }

    /// Log thread: changes as they commit, in version order.
    private func apply(_ committed: LoggedChanges) {
        let cpuAtStart = ThreadCPUClock.now()
        defer { ingestCost.record(.table, cpu: ThreadCPUClock.now() - cpuAtStart, changes: committed.changes.count) }
        let dropped = state.withLock { state in
            var dropped: [UInt64] = []
            for (k, change) in committed.changes.enumerated() {
                let before = state.table.id(of: change.key)
                let prior = before.flatMap { state.table.record(ofID: $0) }.map { ChangedPoint.Prior.values($0.values) }
                let version = committed.first + UInt64(k)
                guard state.table.apply(change, version: version) else {
                    dropped.append(version)
                    continue
                }
                switch change {
                case .upsert(let key, _, _, _, _):
                    let id = state.table.id(of: key)!
                    state.changed.append(
                        ChangedPoint(id: id, now: state.table.record(ofID: id), prior: prior ?? .absent))
                case .delete:
                    // Deleting a key no point has changes nothing.
                    if let before { state.changed.append(ChangedPoint(id: before, now: nil, prior: prior ?? .unknown)) }
                }
            }
            return dropped
        }
        if !dropped.isEmpty { stale.withLock { s in for v in dropped { s.record(v) } } }
        applied.withLock { $0 }?()
    }

    /// Has `tell` called, on the log thread, each time a record was applied.
    func whenApplied(_ tell: @escaping @Sendable () -> Void) {
        applied.withLock { $0 = tell }
    }

    /// How many changes with versions in `range` were dropped as older than the point's newest
    /// observation; asked once their record was applied.
    func staleCount(in range: ClosedRange<UInt64>) -> Int { stale.withLock { $0.count(in: range) } }

    /// Changes dropped as older than the point's newest observation since start.
    var staleTotal: Int { stale.withLock { $0.total } }

    /// The points now.
    var dataset: Dataset { state.withLock { $0.table.dataset } }

    /// The points passing `filter` now, copied under the table's lock (see ``FilterRegistry/Source``).
    func points(passing filter: FilterExpression) -> Dataset {
        state.withLock { $0.table.dataset.filtered(by: filter) }
    }

    /// Index thread: the changes applied since the last call, and the version they bring the data to.
    func takeChanges() -> (version: UInt64, changes: [ChangedPoint]) {
        state.withLock { state in
            defer { state.changed.removeAll(keepingCapacity: true) }
            return (state.table.dataset.version, state.changed)
        }
    }

    /// Index thread: the points now, with the changes applied since the last ``takeChanges()`` (which
    /// the points include), so that a build of these points followed by later changes misses none.
    func datasetTakingChanges() -> (dataset: Dataset, changes: [ChangedPoint]) {
        state.withLock { state in
            defer { state.changed.removeAll(keepingCapacity: true) }
            return (state.table.dataset, state.changed)
        }
    }

    /// What a live index publishes of the points now beyond its delta: the names producers gave, the
    /// property columns, and how many points there are.
    func publication() -> (names: [UInt32: String], columns: [String], count: Int) {
        state.withLock { ($0.table.dataset.names, $0.table.dataset.properties.columns, $0.table.count) }
    }

    /// The value of `column` of the point with `key` now: nil when no point has the key, `.some(nil)`
    /// when it has no such property.
    func value(of key: PointKey, column: String) -> PropertyValue?? {
        state.withLock { state in
            guard let id = state.table.id(of: key), let record = state.table.record(ofID: id) else { return nil }
            guard let c = state.table.dataset.properties.columns.firstIndex(of: column) else { return .some(nil) }
            return .some(record.values[c])
        }
    }

    /// Why a change would be refused beyond its own line (see ``PointTable/problem(with:)``).
    func problem(with change: Change) -> String? {
        state.withLock { $0.table.problem(with: change) }
    }

    /// Closes the log (committing what was appended) once the snapshot being written is; after the
    /// index thread stopped.
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        snapshots.sync {}
        log.close()
    }

    /// Index thread: writes the table as a snapshot when `snapshotEvery` changes were applied since
    /// the last one.
    func snapshotIfDue() {
        let version = state.withLock { $0.table.dataset.version }
        if version >= snapshotVersion + options.snapshotEvery { snapshot() }
    }

    /// Writes the table as a snapshot, off the index thread; one at a time.
    private func snapshot() {
        let copy = state.withLock { $0.table }
        snapshotVersion = copy.dataset.version
        snapshots.async { [log, logger] in
            do {
                try log.saveSnapshot(LogSnapshot(version: copy.dataset.version, bytes: copy.snapshotBytes()))
                logger.info("snapshot at version \(copy.dataset.version)")
            } catch {
                logger.error("snapshot at version \(copy.dataset.version) failed: \(error)")
            }
        }
    }
}
