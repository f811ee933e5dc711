import Dispatch
import Foundation
import PinwheelCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The replicated change log: every record is one message on a NATS JetStream stream, which every
/// node reads in stream order. Any node may append; all nodes apply the same records in the same
/// order, so they hold the same points at the same version.
///
/// Versions count changes, as in the file log, and every node numbers them the same way: a record's
/// first version is one past the last version of the record before it in the stream. A snapshot
/// therefore records both its version and the stream sequence of its last record.
///
/// Snapshots stay on the node's own disk (`snapshot-<version>.jss` in `directory`): they are large
/// (tens of MB for a million points), each node can write its own without coordination, and reading
/// one from local disk at start-up is faster than from the network. A node with no snapshot starts
/// from the data it was given and replays the whole stream, so every node must start from the
/// same `--data` and the stream keeps every record.
///
/// An append answers once JetStream has acknowledged the record (stored on a majority of the
/// stream's replicas) and this node has applied it, so the producer's next read on this node sees it.
/// A failed append stored nothing, except when the acknowledgement timed out: JetStream may then
/// have stored the record, and every node applies it when it arrives. A producer's idempotency key
/// is the record's `Nats-Msg-Id`, so JetStream stores a retry with the same key, on whatever node,
/// only once within the stream's duplicate window.
public final class JetStreamChangeLog: KeyedChangeLog, ChangeLogHealth, @unchecked Sendable {
    public struct Options: Sendable {
        /// `nats://host:port` URLs of the NATS cluster.
        public var servers: [String]
        /// Where this node keeps its snapshots.
        public var directory: String
        /// The stream's name.
        public var stream = "PINWHEEL"
        /// The subject records are published on.
        public var subject = "pinwheel.changes"
        /// Copies of the stream; nil: one per known server, at most 3 (a new stream only).
        public var replicas: Int?
        /// How long an append waits for JetStream's acknowledgement.
        public var publishTimeout: Duration = .seconds(5)
        /// How long JetStream remembers a record's message id (the stream's `Duplicates`): a
        /// producer's retry with the same key within it is not stored again. Set on the stream at
        /// every start.
        public var duplicateWindow: Duration = .seconds(120)
        /// How long to keep asking for the stream while the NATS cluster elects its JetStream leader.
        public var startTimeout: Duration = .seconds(30)
        /// How this node appears in the NATS servers' monitoring.
        public var name = "pinwheel"
        /// Told, on a NATS client thread, when the connection is lost and when it is back.
        public var connectionEvents: (@Sendable (String) -> Void)?

        public init(servers: [String], directory: String) {
            self.servers = servers
            self.directory = directory
        }
    }

    /// Snapshots kept on disk.
    static let keptSnapshots = 2
    private static let snapshotMagic: [UInt8] = Array("PWJS".utf8)
    private static let snapshotHeader = 32

    public let options: Options
    /// Copies of the stream JetStream keeps.
    public let replicas: Int
    private let connection: NATSConnection
    /// Distinguishes this node's records from other nodes' in their message ids.
    private let node: String
    private let appended = Atomic<UInt64>(0)

    private struct State {
        /// The last version applied, and the stream sequence of the record that ended at it.
        var version: UInt64 = 0
        var sequence: UInt64 = 0
        /// Where each record applied since the oldest kept snapshot ended: (version, sequence).
        var ends: [(version: UInt64, sequence: UInt64)] = [(0, 0)]
        /// Appends waiting for their record to be applied, by its stream sequence: each is answered
        /// with the record's last version, or nil when the log closed first.
        var waiting: [UInt64: [@Sendable (UInt64?) -> Void]] = [:]
        /// While `open` catches up: the sequence it waits for.
        var catchingUpTo: UInt64?
        var closing = false
        var opened = false
    }

    private let state = Mutex(State())
    /// Signalled when `open` has caught up.
    private let caughtUp = DispatchSemaphore(value: 0)

    /// Connects to the cluster and makes the stream if it does not exist yet.
    /// - Throws: ``ChangeLogError/nats(function:reason:)`` when no server answers or JetStream refuses.
    public init(options: Options) throws(ChangeLogError) {
        self.options = options
        do {
            try FileManager.default.createDirectory(atPath: options.directory, withIntermediateDirectories: true)
        } catch {
            throw .io(path: options.directory, operation: "mkdir", errno: EACCES)
        }
        connection = try NATSConnection(servers: options.servers, name: options.name, events: options.connectionEvents)
        let wanted = options.replicas ?? min(3, max(options.servers.count, connection.knownServers))
        let (connection, stream, subject, window) = (
            connection, options.stream, options.subject, options.duplicateWindow
        )
        replicas = try Self.retryingNATSErrors(for: options.startTimeout) { () throws(ChangeLogError) in
            try connection.ensureStream(stream, subject: subject, replicas: max(1, wanted), duplicates: window)
        }
        var random = SystemRandomNumberGenerator()
        node = String(random.next(), radix: 36)
    }

    // MARK: Snapshots

    public func latestSnapshot() throws(ChangeLogError) -> LogSnapshot? {
        for (version, name) in try snapshotFiles().reversed() {
            let path = "\(options.directory)/\(name)"
            guard let (sequence, bytes) = try Self.readSnapshot(path, version: version) else { continue }
            state.withLock { s in
                s.version = version
                s.sequence = sequence
                s.ends = [(version, sequence)]
            }
            return LogSnapshot(version: version, bytes: bytes)
        }
        return nil
    }

    public func saveSnapshot(_ snapshot: LogSnapshot) throws(ChangeLogError) {
        if snapshot.version == 0 { try checkInitialDataRetrying(snapshot.bytes) }
        let found = state.withLock { s -> UInt64? in
            guard let k = s.ends.lastIndex(where: { $0.version == snapshot.version }) else { return nil }
            let sequence = s.ends[k].sequence
            s.ends.removeFirst(k)
            return sequence
        }
        guard let sequence = found else {
            throw .corrupt(
                path: options.directory, offset: 0, reason: "no record of this log ends at version \(snapshot.version)")
        }
        var w = ByteWriter()
        w.bytes.append(contentsOf: Self.snapshotMagic)
        w.u32(CRC32.checksum(snapshot.bytes))
        w.u64(snapshot.version)
        w.u64(sequence)
        w.u64(UInt64(snapshot.bytes.count))
        let name = String(format: "snapshot-%020llu.jss", snapshot.version)
        let path = "\(options.directory)/\(name)"
        try Self.writeDurably(path, w.bytes + snapshot.bytes, directory: options.directory)
        for (_, old) in try snapshotFiles().dropLast(Self.keptSnapshots) { unlink("\(options.directory)/\(old)") }
    }

    /// ``checkInitialData(_:)``, again while it fails for NATS reasons, for at most `startTimeout`:
    /// nodes starting at once update the stream at once.
    private func checkInitialDataRetrying(_ bytes: [UInt8]) throws(ChangeLogError) {
        try Self.retryingNATSErrors(for: options.startTimeout) { () throws(ChangeLogError) in
            try checkInitialData(bytes)
        }
    }

    /// Runs `body` again, a quarter second apart, while it fails for NATS reasons, until `time` has
    /// passed: a NATS cluster that is starting answers before its JetStream has a leader, and one
    /// busy creating a replicated stream may let a request time out (seen: creating a node's consumer
    /// while two others started at once).
    static func retryingNATSErrors<T>(
        for time: Duration, pause: () -> Void = { Thread.sleep(forTimeInterval: 0.25) },
        attempt body: () throws(ChangeLogError) -> T
    ) throws(ChangeLogError) -> T {
        let deadline = ContinuousClock.now + time
        while true {
            do {
                return try body()
            } catch {
                guard case .nats = error, ContinuousClock.now < deadline else { throw error }
                pause()
            }
        }
    }

    /// Records what version 0 is in the stream's description, or checks that this node's version 0 is the
    /// same: a node starting from other data would apply the same changes and end with other points.
    private func checkInitialData(_ bytes: [UInt8]) throws(ChangeLogError) {
        let ours = "version 0: \(bytes.count) bytes, CRC-32 \(String(CRC32.checksum(bytes), radix: 16))"
        if let theirs = try connection.streamDescription(options.stream), !theirs.isEmpty {
            guard theirs == ours else {
                throw .initialDataDiffers(stream: options.stream, expected: theirs, found: ours)
            }
            return
        }
        try connection.setStreamDescription(options.stream, ours)
        // Another node may have described it at the same moment: the last one stands.
        let settled = try connection.streamDescription(options.stream) ?? ""
        guard settled == ours else { throw .initialDataDiffers(stream: options.stream, expected: settled, found: ours) }
    }

    /// `snapshot-<20 digits>.jss` files, oldest first.
    private func snapshotFiles() throws(ChangeLogError) -> [(UInt64, String)] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: options.directory)
        } catch {
            throw .io(path: options.directory, operation: "list", errno: EIO)
        }
        return names.compactMap { name -> (UInt64, String)? in
            guard name.hasPrefix("snapshot-"), name.hasSuffix(".jss") else { return nil }
            let digits = name.dropFirst("snapshot-".count).dropLast(".jss".count)
            guard digits.count == 20, let version = UInt64(digits) else { return nil }
            return (version, name)
        }.sorted { $0.0 < $1.0 }
    }

    /// A snapshot file's stream sequence and state bytes; nil when it is damaged.
    private static func readSnapshot(_ path: String, version: UInt64) throws(ChangeLogError) -> (UInt64, [UInt8])? {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .io(path: path, operation: "read", errno: errno)
        }
        let bytes = [UInt8](data)
        guard bytes.count >= snapshotHeader, Array(bytes[0..<4]) == snapshotMagic else { return nil }
        var r = ByteReader(bytes[4..<snapshotHeader])
        guard let crc = try? r.u32(), let stored = try? r.u64(), stored == version, let sequence = try? r.u64(),
            let length = try? r.u64(), Int(length) == bytes.count - snapshotHeader
        else { return nil }
        let payload = Array(bytes[snapshotHeader...])
        return CRC32.checksum(payload) == crc ? (sequence, payload) : nil
    }

    /// Writes to a temporary name, fsyncs, renames, and fsyncs the directory.
    private static func writeDurably(_ path: String, _ bytes: [UInt8], directory: String) throws(ChangeLogError) {
        let temporary = path + ".tmp"
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io(path: temporary, operation: "open", errno: errno) }
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                Glibc.close(fd)
                throw .io(path: temporary, operation: "write", errno: errno)
            }
            written += n
        }
        guard fsync(fd) == 0 else {
            Glibc.close(fd)
            throw .io(path: temporary, operation: "fsync", errno: errno)
        }
        Glibc.close(fd)
        guard rename(temporary, path) == 0 else { throw .io(path: temporary, operation: "rename", errno: errno) }
        let dir = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dir >= 0 else { throw .io(path: directory, operation: "open", errno: errno) }
        defer { Glibc.close(dir) }
        guard fsync(dir) == 0 else { throw .io(path: directory, operation: "fsync", errno: errno) }
    }

    // MARK: Replay and appends

    public func open(after version: UInt64, apply: @escaping @Sendable (LoggedChanges) -> Void) throws(ChangeLogError)
        -> UInt64
    {
        let start = state.withLock { s -> UInt64? in
            precondition(!s.opened, "open once")
            s.opened = true
            guard let end = s.ends.last(where: { $0.version == version }) else { return nil }
            s.version = version
            s.sequence = end.sequence
            return end.sequence
        }
        guard let start else {
            throw .corrupt(path: options.directory, offset: 0, reason: "no snapshot of this log at version \(version)")
        }
        let stream = try connection.streamInfo(options.stream)
        let last = stream?.lastSequence ?? 0
        if last < start {
            throw .streamBehind(stream: options.stream, lastSequence: last, snapshotSequence: start)
        }
        if let first = stream?.firstSequence, last > start, first > start + 1 {
            throw .streamTrimmed(stream: options.stream, firstSequence: first, snapshotSequence: start)
        }
        if last > start { state.withLock { $0.catchingUpTo = last } }
        try Self.retryingNATSErrors(for: options.startTimeout) { () throws(ChangeLogError) in
            try connection.subscribeOrdered(stream: options.stream, subject: options.subject, after: start) {
                [weak self] message in
                self?.receive(message, apply: apply)
            }
        }
        if last > start { caughtUp.wait() }
        return state.withLock { $0.version }
    }

    /// Delivery thread: applies one record, in stream order, and wakes whoever waits for it.
    private func receive(_ message: NATSConnection.Message, apply: (LoggedChanges) -> Void) {
        let (version, sequence) = state.withLock { ($0.version, $0.sequence) }
        // An ordered consumer re-created after a gap may deliver what was applied already.
        guard message.streamSequence > sequence else { return }
        let changes = (try? ChangeCodec.decode(ArraySlice(message.data))) ?? []
        // A message that is not a record (published by something else) changes nothing, on every node.
        if !changes.isEmpty { apply(LoggedChanges(first: version + 1, changes: changes)) }
        let (waiters, now, done) = state.withLock { s -> ([@Sendable (UInt64?) -> Void], UInt64, Bool) in
            s.version = version + UInt64(changes.count)
            s.sequence = message.streamSequence
            if !changes.isEmpty { s.ends.append((s.version, s.sequence)) }
            let waiters = s.waiting.removeValue(forKey: s.sequence) ?? []
            guard let target = s.catchingUpTo, s.sequence >= target else { return (waiters, s.version, false) }
            s.catchingUpTo = nil
            return (waiters, s.version, true)
        }
        for waiter in waiters { waiter(now) }
        if done { caughtUp.signal() }
    }

    public func append(_ changes: [Change], done: @escaping @Sendable (Result<UInt64, ChangeLogError>) -> Void) {
        append(changes, request: AppendRequest()) { outcome in
            switch outcome {
            case .success(.appended(let version)), .success(.duplicate(let version)): done(.success(version))
            case .success(.dropped): done(.failure(.closed))
            case .failure(let error): done(.failure(error))
            }
        }
    }

    public var duplicateWindow: Duration { options.duplicateWindow }

    public func append(
        _ changes: [Change], request: AppendRequest,
        done: @escaping @Sendable (Result<AppendOutcome, ChangeLogError>) -> Void
    ) {
        let current = state.withLock { s -> UInt64? in s.closing ? nil : s.version }
        guard let current else { return done(.failure(.closed)) }
        guard !changes.isEmpty else { return done(.success(.appended(current))) }
        // A producer's key is the record's message id, whichever node publishes it; a record without
        // one gets an id of this node's own (never a producer's: those have the prefix).
        let id = request.key.map { "key:" + $0 } ?? "\(node)-\(appended.add(1, ordering: .relaxed).newValue)"
        let payload = ChangeCodec.encode(changes)
        do throws(ChangeLogError) {
            if payload.count > connection.maxPayload {
                throw .recordTooLarge(bytes: payload.count, limit: connection.maxPayload)
            }
            // Asked last: a request that waited past its deadline (in a queue, or in a process stopped
            // and resumed) must not be published after the producer gave its answer up.
            if let why = request.expired() { return done(.success(.dropped(why))) }
            // While the client reconnects it would buffer the record and publish it whenever it is
            // connected again, and a server that stopped answering would store it whenever it
            // resumes: either long after this append has answered that it failed.
            guard connection.connected, connection.problem == nil else {
                throw .nats(
                    function: "js_Publish", reason: "not connected: \(connection.problem ?? "reconnecting to NATS")")
            }
        } catch {
            return done(.failure(error))
        }
        // No thread waits for JetStream: its acknowledgement comes back on a client thread.
        connection.publishToStream(options.subject, payload, id: id, timeout: options.publishTimeout) {
            [weak self] acknowledged in
            switch acknowledged {
            case .success(let ack):
                guard let self else { return done(.failure(.closed)) }
                waitForApplied(ack, done: done)
            case .failure(let error):
                done(.failure(error))
            }
        }
    }

    /// Client thread: a record JetStream acknowledged is answered once this node has applied it (for
    /// a duplicate: the first one with the key), which gives its version; by the delivery thread when
    /// it is not applied yet.
    private func waitForApplied(
        _ ack: (sequence: UInt64, duplicate: Bool),
        done: @escaping @Sendable (Result<AppendOutcome, ChangeLogError>) -> Void
    ) {
        let answer: @Sendable (UInt64?) -> Void = { version in
            guard let version else { return done(.failure(.closed)) }
            done(.success(ack.duplicate ? .duplicate(version) : .appended(version)))
        }
        let known = state.withLock { s -> UInt64?? in
            guard s.sequence < ack.sequence else {
                // Applied already: its version if this node still knows where it ended, else the
                // current version, which includes it.
                return .some(s.ends.last(where: { $0.sequence == ack.sequence })?.version ?? s.version)
            }
            if s.closing { return .some(nil) }
            s.waiting[ack.sequence, default: []].append(answer)
            return nil
        }
        if let known { answer(known) }
    }

    // MARK: Health

    public var problem: String? { connection.problem }

    public var appendProblem: String? { problem.map { "degraded: \($0)" } }

    public var metricsText: String {
        let (all, unanswered) = connection.disconnects
        return """
            # HELP pinwheel_nats_connected 1 while the change log's NATS connection is usable.
            # TYPE pinwheel_nats_connected gauge
            pinwheel_nats_connected \(connection.problem == nil ? 1 : 0)
            # HELP pinwheel_nats_disconnects_total NATS connections lost (the client then moves to another server).
            # TYPE pinwheel_nats_disconnects_total counter
            pinwheel_nats_disconnects_total \(all)
            # HELP pinwheel_nats_unanswered_total Times the NATS server stopped answering pings (the client then gives it up).
            # TYPE pinwheel_nats_unanswered_total counter
            pinwheel_nats_unanswered_total \(unanswered)
            # HELP pinwheel_nats_server The NATS server the change log is connected to (or was last).
            # TYPE pinwheel_nats_server gauge
            pinwheel_nats_server{url="\(connection.server)"} 1

            """
    }

    public func close() {
        let first = state.withLock { s -> Bool in
            defer { s.closing = true }
            return !s.closing
        }
        guard first else { return }
        // Appends already acknowledged wait for their record to come back; give them a moment.
        let deadline = ContinuousClock.now + .seconds(5)
        while state.withLock({ !$0.waiting.isEmpty }) && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.01)
        }
        // Those whose record never came back before the close are answered as not stored here.
        for waiter in state.withLock({ s in
            defer { s.waiting.removeAll() }
            return s.waiting.values.flatMap { $0 }
        }) {
            waiter(nil)
        }
        connection.close()
    }
}
