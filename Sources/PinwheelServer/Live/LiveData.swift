import Dispatch
import Foundation
import Logging
import PinwheelCore
import Synchronization

/// The points of a server whose data changes: the table producers edit, the change log that keeps
/// every accepted change, and the thread that rebuilds the index from the table.
///
/// The index is rebuilt whole, in the background, from a copy of the table: queries never wait for a
/// change, and the index a session reads is always exactly a fresh build of some version of the data
/// (unchanged clusters keep their ids, since ids come from the points that seed them). A rebuild
/// starts as soon as changes arrived and the last one started at least `refreshInterval` ago, so a
/// burst of changes costs one rebuild. Every `snapshotEvery` changes the table is written to the
/// log as a snapshot, so a restart replays at most that many.
final class LiveData: @unchecked Sendable {
    struct Options: Sendable {
        /// Least time between the starts of two rebuilds.
        var refreshInterval: Duration = .milliseconds(50)
        /// Changes between two snapshots.
        var snapshotEvery: UInt64 = 1_000_000
    }

    let log: any ChangeLog
    let options: Options
    private let table: Mutex<PointTable>
    private let logger: Logger
    /// Signalled when a change was applied or at stop.
    private let wake = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let snapshots = DispatchQueue(label: "pinwheel-snapshot")
    /// Rebuild thread only: the version of the last snapshot asked for.
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
        table = Mutex(start)
        let replayed = try log.open(after: start.dataset.version) { [unowned self] committed in
            apply(committed)
        }
        logger.info("data at version \(replayed): \(self.table.withLock { $0.count }) points")
    }

    /// Log thread: changes as they commit, in version order.
    private func apply(_ committed: LoggedChanges) {
        table.withLock { t in
            for (k, change) in committed.changes.enumerated() {
                t.apply(change, version: committed.first + UInt64(k))
            }
        }
        wake.signal()
    }

    /// The points now.
    var dataset: Dataset { table.withLock { $0.dataset } }

    /// Why a change would be refused beyond its own line (see ``PointTable/problem(with:)``).
    func problem(with change: Change) -> String? {
        table.withLock { $0.problem(with: change) }
    }

    /// Starts the rebuild thread; `publish` gets each new version of the data, on that thread.
    func start(publish: @escaping @Sendable (Dataset) -> Void) {
        let thread = Thread { [self] in
            rebuildLoop(publish: publish)
            finished.signal()
        }
        thread.name = "pinwheel-rebuild"
        thread.start()
    }

    /// Stops the rebuild thread and closes the log (committing what was appended).
    func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        wake.signal()
        finished.wait()
        snapshots.sync {}
        log.close()
    }

    private func rebuildLoop(publish: @Sendable (Dataset) -> Void) {
        var published = dataset.version
        var lastStart = ContinuousClock.now - options.refreshInterval
        while true {
            wake.wait()
            if stopping.load(ordering: .acquiring) { return }
            let due = lastStart + options.refreshInterval
            if due > .now { Thread.sleep(forTimeInterval: Double((due - .now).nanoseconds) / 1e9) }
            // Signals that arrived meanwhile are covered by this rebuild.
            while wake.wait(timeout: .now()) == .success {}
            let data = dataset
            guard data.version != published else { continue }
            lastStart = .now
            publish(data)
            published = data.version
            if data.version >= snapshotVersion + options.snapshotEvery { snapshot() }
        }
    }

    /// Writes the table as a snapshot, off the rebuild thread; one at a time.
    private func snapshot() {
        let copy = table.withLock { $0 }
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
