import Foundation
import PinwheelCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The embedded change log: records in segment files in one directory, written by one thread with
/// group commit (everything queued goes out in one write and one fsync), and snapshots beside them.
///
/// Files: `changes-<first version>.log` (20-digit versions, so names sort in order) hold records
/// (``SegmentScan``); `snapshot-<version>.bin` hold snapshots. A snapshot is `"PWSN"`, its version,
/// its length and CRC, then its bytes; it is written to a temporary name, fsync'd and renamed, and the
/// directory is fsync'd after every file it gains or loses.
///
/// What is on disk stays recoverable whatever the interleaving of appends, snapshots and stops: the
/// next version is known under the same lock as the writes, so a new segment is named after the
/// record it will hold first; a segment is deleted only when an intact snapshot covers every record
/// it holds (read from the segment, not guessed from names).
///
/// `open` never guesses (``LogFolder/plan(after:)``): an interrupted write at the very end of the
/// last segment is cut off (it was never acknowledged, since acknowledgements wait for the fsync) and
/// reported in ``recovery``; damage followed by intact records, or a gap in the versions, refuses to
/// start with the file, the offset and the versions on each side.
///
/// A failed write or fsync (a full disk) fails the appends it carried, then cuts the segment back to
/// what was durable before them; later appends are tried again, and ``appendProblem`` says why the
/// log is unwritable until one succeeds or a probe finds room again.
public final class FileChangeLog: ChangeLog, @unchecked Sendable {
    /// Snapshots kept; segments are deleted only when the oldest kept one covers them.
    static let keptSnapshots = 2
    /// How often the log thread checks for room again while it cannot write.
    static let probeInterval: Duration = .milliseconds(500)

    public let directory: String

    /// What `open` and ``latestSnapshot()`` found and did about damage.
    public struct Recovery: Sendable, Equatable {
        /// The torn tail cut off the last segment: never acknowledged.
        public var cut: TornTail?
        /// Snapshots passed over because they were damaged, newest first, with why.
        public var skippedSnapshots: [String] = []
        /// Damaged bytes that held no change the start needed (the snapshot covers them).
        public var harmless: [LogFolder.Damage] = []
    }

    /// Bytes cut off the end of the last segment.
    public struct TornTail: Sendable, Equatable, CustomStringConvertible {
        public var path: String
        public var offset: Int
        public var bytes: Int
        public var lastVersionKept: UInt64

        public var description: String {
            "cut \(bytes) bytes of an interrupted write off \(path) at byte \(offset); the last version kept is \(lastVersionKept)"
        }
    }

    private struct Queue {
        var pending: [(changes: [Change], done: @Sendable (Result<UInt64, ChangeLogError>) -> Void)] = []
        var closing = false
    }

    /// Appends waiting for the log thread.
    private let queue = Mutex(Queue())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// The open segment: held by the log thread while it writes, and by `saveSnapshot` to start a new one.
    private let segment = Mutex(Segment())
    /// One snapshot at a time: a snapshot's clean-up reads the segments the previous one left.
    private let snapshotting = Mutex(())
    /// Changes committed so far (the last version).
    private let committed = Atomic<UInt64>(0)
    private let fsyncs = Atomic<Int>(0)
    private let started = Atomic<Bool>(false)
    /// Why appends fail now; nil while they succeed.
    private let unwritable = Mutex<ChangeLogError?>(nil)
    private let report = Mutex(Recovery())
    private let warn: @Sendable (String) -> Void

    private struct Segment {
        var fd: Int32 = -1
        /// The version its name carries.
        var first: UInt64 = 1
        /// The version the next record gets: moves only with a durable write, under this lock.
        var next: UInt64 = 1
        /// Bytes durable (written and fsync'd).
        var durable = 0
        /// A write or fsync failed and the file could not yet be cut back to `durable`.
        var unknownTail = false
    }

    /// Opens (creating if needed) the log in `directory`.
    /// - Parameter warn: told, as it happens, of damage the log recovered from (a torn tail it cut, a
    ///   damaged snapshot it passed over), and of a full disk and its end.
    /// - Throws: ``ChangeLogError/io(path:operation:errno:)`` when the directory cannot be made.
    public init(directory: String, warn: @escaping @Sendable (String) -> Void = { _ in }) throws(ChangeLogError) {
        self.directory = directory
        self.warn = warn
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .io(path: directory, operation: "mkdir", errno: EACCES)
        }
    }

    /// The number of fsyncs the log thread did: appends that shared one count once.
    public var fsyncCount: Int { fsyncs.load(ordering: .relaxed) }

    /// What the start found and did about damage.
    public var recovery: Recovery { report.withLock { $0 } }

    /// Bytes of a torn record cut off the last segment by `open`.
    public var truncatedBytes: Int { recovery.cut?.bytes ?? 0 }

    public var appendProblem: String? { unwritable.withLock { $0.map { "change log unwritable: \($0)" } } }

    // MARK: Snapshots

    public func latestSnapshot() throws(ChangeLogError) -> LogSnapshot? {
        let (snapshot, skipped) = try LogFolder(directory: directory, allSnapshots: false, segments: false)
            .newestIntactSnapshot()
        for (name, problem) in skipped {
            let note =
                "snapshot \(directory)/\(name) is damaged (\(problem)); "
                + "starting from \(snapshot.map { "the snapshot at version \($0.version)" } ?? "nothing") instead"
            report.withLock { $0.skippedSnapshots.append(note) }
            warn(note)
        }
        return snapshot
    }

    public func saveSnapshot(_ snapshot: LogSnapshot) throws(ChangeLogError) {
        try snapshotting.withLock { _ throws(ChangeLogError) in
            // Once closed, the folder may be opened by another log: nothing more is written to it.
            guard !queue.withLock({ $0.closing }) else { throw .closed }
            var header = ByteWriter()
            header.bytes.append(contentsOf: LogFolder.snapshotMagic)
            header.u64(snapshot.version)
            header.u64(UInt64(snapshot.bytes.count))
            header.u32(CRC32.checksum(snapshot.bytes))
            let name = "snapshot-\(LogFolder.padded(snapshot.version)).bin"
            let temporary = "\(directory)/\(name).tmp"
            do throws(ChangeLogError) {
                try write(temporary, header.bytes + snapshot.bytes)
            } catch {
                // A full disk: the partial file would only hold on to the space.
                unlink(temporary)
                throw error
            }
            guard rename(temporary, "\(directory)/\(name)") == 0 else {
                throw .io(path: temporary, operation: "rename", errno: errno)
            }
            try syncDirectory()
            // Before `open` the log thread has not started: `open` starts the segment.
            guard started.load(ordering: .acquiring) else { return }
            try startNewSegment()
            try dropOldFiles()
        }
    }

    /// Deletes intact snapshots beyond the newest ``keptSnapshots``, and the segments before the open
    /// one whose every record the oldest kept snapshot holds.
    private func dropOldFiles() throws(ChangeLogError) {
        let folder = try LogFolder(directory: directory, allSnapshots: true)
        let intact = folder.snapshots.filter { $0.problem == nil }
        guard intact.count >= Self.keptSnapshots else { return }
        let covered = intact[intact.count - Self.keptSnapshots].version
        // Damaged snapshots newer than that are left for `pinwheel log check` to show.
        for file in folder.snapshots where file.version < covered { unlink("\(directory)/\(file.name)") }
        let open = segment.withLock { $0.first }
        for file in folder.segments where file.first < open {
            // Damage between intact records held versions below the last of them; a damaged tail
            // may have held any, so that segment is left for an operator to judge.
            guard file.scan.tail == nil else { continue }
            let last = file.scan.records.last?.last ?? 0
            if last <= covered { unlink("\(directory)/\(file.name)") }
        }
        try syncDirectory()
    }

    // MARK: Replay and appends

    public func open(after version: UInt64, apply: @escaping @Sendable (LoggedChanges) -> Void) throws(ChangeLogError)
        -> UInt64
    {
        precondition(!started.exchange(true, ordering: .acquiringAndReleasing), "open once")
        // A snapshot a stop interrupted before its rename: never used, only holding space.
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where name.hasPrefix("snapshot-") && name.hasSuffix(".bin.tmp") {
            unlink("\(directory)/\(name)")
        }
        let folder = try LogFolder(directory: directory, allSnapshots: false)
        let plan = folder.plan(after: version)
        if let refusal = plan.refusal { throw refusal }
        for damage in plan.harmless {
            let note =
                "\(directory)/\(damage.segment) has \(damage.bytes) damaged bytes at byte \(damage.offset), "
                + "holding no change after version \(version) (the snapshot has them); ignored"
            report.withLock { $0.harmless.append(damage) }
            warn(note)
        }
        for (k, records) in plan.replay {
            let path = "\(directory)/\(folder.segments[k].name)"
            let bytes = try LogFolder.read(path)
            for r in records {
                let payload = bytes[(r.offset + SegmentScan.recordHeader)..<r.end]
                guard let changes = try? ChangeCodec.decode(payload), UInt64(changes.count) == r.last - r.first + 1
                else {
                    throw .corrupt(
                        path: path, offset: r.offset, reason: "its checksum matches but its changes cannot be read")
                }
                let skip = Int(version >= r.first ? version - r.first + 1 : 0)
                apply(LoggedChanges(first: r.first + UInt64(skip), changes: Array(changes[skip...])))
            }
        }
        if let cut = plan.cut {
            let path = "\(directory)/\(cut.segment)"
            try truncate(path, to: cut.offset)
            let torn = TornTail(path: path, offset: cut.offset, bytes: cut.bytes, lastVersionKept: plan.last)
            report.withLock { $0.cut = torn }
            warn(torn.description)
        }
        committed.store(plan.last, ordering: .releasing)
        segment.withLock { $0.next = plan.last + 1 }
        try startNewSegment()
        let thread = Thread { [self] in
            run(apply: apply)
            finished.signal()
        }
        thread.name = "pinwheel-log"
        thread.start()
        return plan.last
    }

    public func append(_ changes: [Change], done: @escaping @Sendable (Result<UInt64, ChangeLogError>) -> Void) {
        guard !changes.isEmpty else { return done(.success(committed.load(ordering: .acquiring))) }
        let closed = queue.withLock { q -> Bool in
            if q.closing { return true }
            q.pending.append((changes, done))
            return false
        }
        if closed { return done(.failure(.closed)) }
        wake.signal()
    }

    public func close() {
        let wasOpen = queue.withLock { q -> Bool in
            defer { q.closing = true }
            return !q.closing
        }
        // A snapshot being written (it may start a segment and drop old files) ends before close
        // returns; later ones are refused.
        snapshotting.withLock { _ in }
        guard wasOpen, started.load(ordering: .acquiring) else { return }
        wake.signal()
        finished.wait()
        segment.withLock { s in
            if s.fd >= 0 { Glibc.close(s.fd) }
            s.fd = -1
        }
    }

    /// The log thread: takes everything queued, writes it as one buffer, fsyncs once, applies it in
    /// order, then answers. While the log cannot write it also wakes to probe for room.
    private func run(apply: @Sendable (LoggedChanges) -> Void) {
        while true {
            if unwritable.withLock({ $0 != nil }) {
                if wake.wait(timeout: .now() + .nanoseconds(Int(Self.probeInterval.nanoseconds))) == .timedOut {
                    probe()
                    continue
                }
            } else {
                wake.wait()
            }
            let (batch, closing) = queue.withLock { q in
                defer { q.pending.removeAll(keepingCapacity: true) }
                return (q.pending, q.closing)
            }
            if !batch.isEmpty { commit(batch, apply: apply) }
            if closing {
                // Appends that arrived with the close are answered too.
                let rest = queue.withLock { q in
                    defer { q.pending.removeAll() }
                    return q.pending
                }
                if !rest.isEmpty { commit(rest, apply: apply) }
                return
            }
        }
    }

    private func commit(
        _ batch: [(changes: [Change], done: @Sendable (Result<UInt64, ChangeLogError>) -> Void)],
        apply: @Sendable (LoggedChanges) -> Void
    ) {
        var records: [LoggedChanges] = []
        let failure = segment.withLock { s -> ChangeLogError? in
            let path = "\(directory)/changes-\(LogFolder.padded(s.first)).log"
            if let failure = restore(&s, path: path) { return failure }
            var next = s.next
            var buffer: [UInt8] = []
            for item in batch {
                let payload = ChangeCodec.encode(item.changes)
                var head = ByteWriter()
                head.u32(UInt32(payload.count))
                var body = ByteWriter()
                body.u64(next)
                head.u32(CRC32.checksum(payload, continuing: CRC32.checksum(body.bytes)))
                buffer += head.bytes
                buffer += body.bytes
                buffer += payload
                records.append(LoggedChanges(first: next, changes: item.changes))
                next += UInt64(item.changes.count)
            }
            var written = 0
            while written < buffer.count {
                let n = buffer[written...].withUnsafeBytes { Glibc.write(s.fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    return fail(&s, .io(path: path, operation: "write", errno: n < 0 ? errno : ENOSPC), path)
                }
                written += n
            }
            guard fsync(s.fd) == 0 else { return fail(&s, .io(path: path, operation: "fsync", errno: errno), path) }
            s.durable += buffer.count
            s.next = next
            return nil
        }
        if let failure {
            for item in batch { item.done(.failure(failure)) }
            return
        }
        fsyncs.add(1, ordering: .relaxed)
        if unwritable.withLock({ $0 }) != nil { recovered() }
        for record in records { apply(record) }
        committed.store(records.last!.last, ordering: .releasing)
        for (item, record) in zip(batch, records) { item.done(.success(record.last)) }
    }

    /// After a failed write or fsync: the log is unwritable until a write succeeds, and the segment
    /// is cut back to what was durable so that no half-written record stays in it.
    private func fail(_ s: inout Segment, _ failure: ChangeLogError, _ path: String) -> ChangeLogError {
        let first = unwritable.withLock { u -> Bool in
            defer { u = failure }
            return u == nil
        }
        if first { warn("\(failure): appends fail until a write succeeds again") }
        s.unknownTail = true
        _ = restore(&s, path: path)
        return failure
    }

    /// Cuts the segment back to its durable bytes when a failure left more; nil once it is so.
    private func restore(_ s: inout Segment, path: String) -> ChangeLogError? {
        guard s.unknownTail else { return nil }
        guard ftruncate(s.fd, off_t(s.durable)) == 0, fsync(s.fd) == 0 else {
            return .io(path: path, operation: "truncate", errno: errno)
        }
        s.unknownTail = false
        return nil
    }

    /// Log thread, while unwritable: asks the file system for room for a record beyond the durable end
    /// (and gives it back); when it has room again, the log is writable. Where fallocate is not
    /// supported (glibc's emulation refuses an O_APPEND file) only a successful append says so.
    private func probe() {
        let room = segment.withLock { s -> Bool in
            guard restore(&s, path: "\(directory)/changes-\(LogFolder.padded(s.first)).log") == nil else {
                return false
            }
            guard posix_fallocate(s.fd, off_t(s.durable), 1 << 16) == 0 else { return false }
            return ftruncate(s.fd, off_t(s.durable)) == 0 && fsync(s.fd) == 0
        }
        if room { recovered() }
    }

    private func recovered() {
        unwritable.withLock { $0 = nil }
        warn("the change log is writable again")
    }

    // MARK: Files

    /// Closes the open segment and starts `changes-<next version>.log`, both under the segment lock,
    /// so the name is the version of the first record it will hold.
    private func startNewSegment() throws(ChangeLogError) {
        try segment.withLock { s throws(ChangeLogError) in
            // A segment left with a failed write's bytes would read as damage once it is not the last.
            if s.fd >= 0, let failure = restore(&s, path: "\(directory)/changes-\(LogFolder.padded(s.first)).log") {
                throw failure
            }
            let path = "\(directory)/changes-\(LogFolder.padded(s.next)).log"
            let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw .io(path: path, operation: "open", errno: errno) }
            let size = lseek(fd, 0, SEEK_END)
            guard size >= 0 else {
                Glibc.close(fd)
                throw .io(path: path, operation: "lseek", errno: errno)
            }
            if s.fd >= 0 { Glibc.close(s.fd) }
            s.fd = fd
            s.first = s.next
            s.durable = Int(size)
            s.unknownTail = false
        }
        try syncDirectory()
    }

    private func write(_ path: String, _ bytes: [UInt8]) throws(ChangeLogError) {
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io(path: path, operation: "open", errno: errno) }
        defer { Glibc.close(fd) }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .io(path: path, operation: "write", errno: n < 0 ? errno : ENOSPC) }
            written += n
        }
        guard fsync(fd) == 0 else { throw .io(path: path, operation: "fsync", errno: errno) }
    }

    private func truncate(_ path: String, to length: Int) throws(ChangeLogError) {
        let fd = Glibc.open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .io(path: path, operation: "open", errno: errno) }
        defer { Glibc.close(fd) }
        guard ftruncate(fd, off_t(length)) == 0, fsync(fd) == 0 else {
            throw .io(path: path, operation: "truncate", errno: errno)
        }
    }

    private func syncDirectory() throws(ChangeLogError) {
        let fd = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw .io(path: directory, operation: "open", errno: errno) }
        defer { Glibc.close(fd) }
        guard fsync(fd) == 0 else { throw .io(path: directory, operation: "fsync", errno: errno) }
    }
}
