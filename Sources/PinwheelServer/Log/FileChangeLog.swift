import Foundation
import PinwheelCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The embedded change log: records in segment files in one directory, written by one thread with
/// group commit (everything queued goes out in one write and one fsync), and snapshots beside them.
///
/// Files: `changes-<first version>.log` (20-digit versions, so names sort in order) hold records;
/// `snapshot-<version>.bin` hold snapshots. A record is `[u32 length][u32 CRC-32][u64 first
/// version][payload]` (``ChangeCodec``); the CRC covers the version and the payload. A snapshot is
/// `"PWSN"`, its version, its length and CRC, then its bytes; it is written to a temporary name,
/// fsync'd and renamed, and the directory is fsync'd after every file it gains or loses.
///
/// After a crash the last segment may end in a torn record: `open` cuts it off (it was never
/// acknowledged, since acknowledgements wait for the fsync). A damaged record anywhere else is
/// refused, since dropping it would lose acknowledged changes.
public final class FileChangeLog: ChangeLog, @unchecked Sendable {
    /// Snapshots kept; segments are deleted only when the oldest kept one covers them.
    static let keptSnapshots = 2
    private static let recordHeader = 16
    private static let snapshotMagic: [UInt8] = Array("PWSN".utf8)

    public let directory: String

    private struct Queue {
        var pending: [(changes: [Change], done: @Sendable (Result<UInt64, ChangeLogError>) -> Void)] = []
        var closing = false
        var failed: ChangeLogError?
    }

    /// Appends waiting for the log thread.
    private let queue = Mutex(Queue())
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    /// The open segment: held by the log thread while it writes, and by `saveSnapshot` to start a new one.
    private let segment = Mutex(Segment())
    /// Changes committed so far (the last version).
    private let committed = Atomic<UInt64>(0)
    private let fsyncs = Atomic<Int>(0)
    private let started = Atomic<Bool>(false)
    /// Bytes of a torn record cut off the last segment by `open`, for the log.
    public private(set) var truncatedBytes = 0

    private struct Segment {
        var fd: Int32 = -1
        var first: UInt64 = 1
    }

    /// Opens (creating if needed) the log in `directory`.
    /// - Throws: ``ChangeLogError/io(path:operation:errno:)`` when the directory cannot be made.
    public init(directory: String) throws(ChangeLogError) {
        self.directory = directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .io(path: directory, operation: "mkdir", errno: EACCES)
        }
    }

    /// The number of fsyncs the log thread did: appends that shared one count once.
    public var fsyncCount: Int { fsyncs.load(ordering: .relaxed) }

    // MARK: Snapshots

    public func latestSnapshot() throws(ChangeLogError) -> LogSnapshot? {
        for (version, name) in try files(prefix: "snapshot-", suffix: ".bin").reversed() {
            let path = "\(directory)/\(name)"
            let bytes = try read(path)
            if let bytes = Self.snapshotPayload(bytes, version: version) {
                return LogSnapshot(version: version, bytes: bytes)
            }
            // A damaged newest snapshot: the previous one and the segments after it still hold everything.
        }
        return nil
    }

    public func saveSnapshot(_ snapshot: LogSnapshot) throws(ChangeLogError) {
        var header = ByteWriter()
        header.bytes.append(contentsOf: Self.snapshotMagic)
        header.u64(snapshot.version)
        header.u64(UInt64(snapshot.bytes.count))
        header.u32(CRC32.checksum(snapshot.bytes))
        let name = "snapshot-\(Self.padded(snapshot.version)).bin"
        let temporary = "\(directory)/\(name).tmp"
        try write(temporary, header.bytes + snapshot.bytes)
        guard rename(temporary, "\(directory)/\(name)") == 0 else {
            throw .io(path: temporary, operation: "rename", errno: errno)
        }
        try syncDirectory()
        try startNewSegment()
        try dropOldFiles()
    }

    private static func snapshotPayload(_ bytes: [UInt8], version: UInt64) -> [UInt8]? {
        guard bytes.count >= 24, Array(bytes[0..<4]) == snapshotMagic else { return nil }
        var r = ByteReader(bytes[4...])
        guard let stored = try? r.u64(), stored == version, let length = try? r.u64(), let crc = try? r.u32(),
            Int(length) == r.remaining
        else { return nil }
        let payload = Array(bytes[24...])
        return CRC32.checksum(payload) == crc ? payload : nil
    }

    /// Deletes snapshots beyond the newest ``keptSnapshots`` and the segments the oldest kept one covers.
    private func dropOldFiles() throws(ChangeLogError) {
        let snapshots = try files(prefix: "snapshot-", suffix: ".bin")
        guard snapshots.count >= Self.keptSnapshots else { return }
        let keep = snapshots.suffix(Self.keptSnapshots)
        for (_, name) in snapshots.dropLast(Self.keptSnapshots) { unlink("\(directory)/\(name)") }
        let covered = keep.first!.0
        let segments = try files(prefix: "changes-", suffix: ".log")
        // A segment's changes end where the next one starts.
        for (k, (_, name)) in segments.enumerated().dropLast() where segments[k + 1].0 - 1 <= covered {
            unlink("\(directory)/\(name)")
        }
        try syncDirectory()
    }

    // MARK: Replay and appends

    public func open(after version: UInt64, apply: @escaping @Sendable (LoggedChanges) -> Void) throws(ChangeLogError)
        -> UInt64
    {
        precondition(!started.exchange(true, ordering: .acquiringAndReleasing), "open once")
        let segments = try files(prefix: "changes-", suffix: ".log")
        var last = version
        for (k, (first, name)) in segments.enumerated() {
            let path = "\(directory)/\(name)"
            let bytes = try read(path)
            var offset = 0
            var expected = first
            while offset < bytes.count {
                // A record the snapshot already holds is stepped over unread (unless it is the last
                // segment's tail, which must be checked for a tear).
                if k < segments.count - 1, let (first, last, end) = Self.span(in: bytes, at: offset), last <= version {
                    guard first == expected else {
                        throw .corrupt(path: path, offset: offset, reason: "version \(first), expected \(expected)")
                    }
                    expected = last + 1
                    offset = end
                    continue
                }
                guard let (record, end) = Self.record(in: bytes, at: offset, path: path) else {
                    guard k == segments.count - 1 else {
                        throw .corrupt(path: path, offset: offset, reason: "a damaged record before the last segment")
                    }
                    // A record torn by a crash: never acknowledged, so cut it off.
                    truncatedBytes = bytes.count - offset
                    try truncate(path, to: offset)
                    break
                }
                guard record.first == expected else {
                    throw .corrupt(path: path, offset: offset, reason: "version \(record.first), expected \(expected)")
                }
                expected = record.last + 1
                if record.last > version {
                    let skip = Int(version >= record.first ? version - record.first + 1 : 0)
                    apply(LoggedChanges(first: record.first + UInt64(skip), changes: Array(record.changes[skip...])))
                    last = record.last
                }
                offset = end
            }
            last = max(last, expected - 1)
        }
        committed.store(last, ordering: .releasing)
        try startNewSegment()
        let thread = Thread { [self] in
            run(apply: apply)
            finished.signal()
        }
        thread.name = "pinwheel-log"
        thread.start()
        return last
    }

    public func append(_ changes: [Change], done: @escaping @Sendable (Result<UInt64, ChangeLogError>) -> Void) {
        guard !changes.isEmpty else { return done(.success(committed.load(ordering: .acquiring))) }
        let refused = queue.withLock { q -> ChangeLogError? in
            if q.closing { return .closed }
            if let failed = q.failed { return failed }
            q.pending.append((changes, done))
            return nil
        }
        if let refused { return done(.failure(refused)) }
        wake.signal()
    }

    public func close() {
        let wasOpen = queue.withLock { q -> Bool in
            defer { q.closing = true }
            return !q.closing
        }
        guard wasOpen, started.load(ordering: .acquiring) else { return }
        wake.signal()
        finished.wait()
        segment.withLock { s in
            if s.fd >= 0 { Glibc.close(s.fd) }
            s.fd = -1
        }
    }

    /// The log thread: takes everything queued, writes it as one buffer, fsyncs once, applies it in
    /// order, then answers.
    private func run(apply: @Sendable (LoggedChanges) -> Void) {
        while true {
            wake.wait()
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
        var next = committed.load(ordering: .acquiring) + 1
        var buffer: [UInt8] = []
        var records: [LoggedChanges] = []
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
        let failure = segment.withLock { s -> ChangeLogError? in
            let path = "\(directory)/changes-\(Self.padded(s.first)).log"
            var written = 0
            while written < buffer.count {
                let n = buffer[written...].withUnsafeBytes { Glibc.write(s.fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return .io(path: path, operation: "write", errno: errno) }
                written += n
            }
            guard fsync(s.fd) == 0 else { return .io(path: path, operation: "fsync", errno: errno) }
            return nil
        }
        if let failure {
            // After a failed write or fsync the file's state is unknown: refuse everything from now on.
            queue.withLock { $0.failed = failure }
            for item in batch { item.done(.failure(failure)) }
            return
        }
        fsyncs.add(1, ordering: .relaxed)
        for record in records { apply(record) }
        committed.store(next - 1, ordering: .releasing)
        for (item, record) in zip(batch, records) { item.done(.success(record.last)) }
    }

    // MARK: Files

    /// Closes the open segment and starts `changes-<next version>.log`.
    private func startNewSegment() throws(ChangeLogError) {
        let first = committed.load(ordering: .acquiring) + 1
        let path = "\(directory)/changes-\(Self.padded(first)).log"
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io(path: path, operation: "open", errno: errno) }
        segment.withLock { s in
            if s.fd >= 0 { Glibc.close(s.fd) }
            s.fd = fd
            s.first = first
        }
        try syncDirectory()
    }

    /// The versions a record holds and where it ends, read from its header and count alone.
    private static func span(in bytes: [UInt8], at offset: Int) -> (first: UInt64, last: UInt64, end: Int)? {
        guard bytes.count - offset >= recordHeader + 4 else { return nil }
        var r = ByteReader(bytes[offset..<offset + recordHeader + 4])
        guard let length = try? r.u32(), (try? r.u32()) != nil, let first = try? r.u64(), let count = try? r.u32(),
            count > 0
        else { return nil }
        let end = offset + recordHeader + Int(length)
        return end <= bytes.count ? (first, first + UInt64(count) - 1, end) : nil
    }

    /// One record at `offset`, nil when it is torn or damaged; with the offset after it.
    private static func record(in bytes: [UInt8], at offset: Int, path: String) -> (LoggedChanges, Int)? {
        guard bytes.count - offset >= recordHeader else { return nil }
        var r = ByteReader(bytes[offset..<offset + recordHeader])
        guard let length = try? r.u32(), let crc = try? r.u32(), let first = try? r.u64() else { return nil }
        let end = offset + recordHeader + Int(length)
        guard end <= bytes.count else { return nil }
        let payload = bytes[(offset + recordHeader)..<end]
        guard CRC32.checksum(payload, continuing: CRC32.checksum(bytes[(offset + 8)..<(offset + 16)])) == crc,
            let changes = try? ChangeCodec.decode(payload), !changes.isEmpty
        else { return nil }
        return (LoggedChanges(first: first, changes: changes), end)
    }

    /// Files named `<prefix><20 digits><suffix>`, by their number.
    private func files(prefix: String, suffix: String) throws(ChangeLogError) -> [(UInt64, String)] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw .io(path: directory, operation: "list", errno: EIO)
        }
        return names.compactMap { name -> (UInt64, String)? in
            guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return nil }
            let digits = name.dropFirst(prefix.count).dropLast(suffix.count)
            guard digits.count == 20, let n = UInt64(digits) else { return nil }
            return (n, name)
        }.sorted { $0.0 < $1.0 }
    }

    private func read(_ path: String) throws(ChangeLogError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .io(path: path, operation: "read", errno: errno)
        }
        return [UInt8](data)
    }

    private func write(_ path: String, _ bytes: [UInt8]) throws(ChangeLogError) {
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io(path: path, operation: "open", errno: errno) }
        defer { Glibc.close(fd) }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { throw .io(path: path, operation: "write", errno: errno) }
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

    private static func padded(_ n: UInt64) -> String {
        let digits = String(n)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }
}
