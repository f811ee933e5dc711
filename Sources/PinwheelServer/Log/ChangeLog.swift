import PinwheelCore

/// Where accepted changes are kept, in one order every reader agrees on. The index and the sessions
/// see the log only through this protocol, so the embedded file log (``FileChangeLog``) and a
/// replicated one can take each other's place.
///
/// Versions count changes: the log's first change is version 1, and a record of n changes appended
/// at version v holds v + 1 ... v + n.
public protocol ChangeLog: AnyObject, Sendable {
    /// The newest snapshot, nil when none was saved.
    func latestSnapshot() throws(ChangeLogError) -> LogSnapshot?

    /// Replays every change after `version` to `apply`, in order, before returning; then keeps
    /// delivering changes as they commit (this node's appends and, for a shared log, other nodes'),
    /// in order, one call at a time.
    /// - Returns: the version of the last change replayed (`version` when there were none).
    func open(after version: UInt64, apply: @escaping @Sendable (LoggedChanges) -> Void) throws(ChangeLogError)
        -> UInt64

    /// Appends changes as one record. `done` gets the version of the last of them once they are
    /// durable (for the file log: on disk and fsync'd; `apply` has had them by then), or an error, in
    /// which case none of them were committed.
    func append(_ changes: [Change], done: @escaping @Sendable (Result<UInt64, ChangeLogError>) -> Void)

    /// Keeps a snapshot of the state at `snapshot.version`; the changes up to it may then be dropped.
    func saveSnapshot(_ snapshot: LogSnapshot) throws(ChangeLogError)

    /// Commits what was appended, then stops; later appends fail with ``ChangeLogError/closed``.
    func close()

    /// Why appends fail now (a full disk, say), for `/healthz`; nil while the log takes them.
    var appendProblem: String? { get }
}

extension ChangeLog {
    public var appendProblem: String? { nil }
}

/// Changes as committed: the version of the first, and the changes in order.
public struct LoggedChanges: Sendable, Equatable {
    public var first: UInt64
    public var changes: [Change]

    public init(first: UInt64, changes: [Change]) {
        self.first = first
        self.changes = changes
    }

    /// The version of the last change.
    public var last: UInt64 { first + UInt64(changes.count) - 1 }
}

/// The state of the points as of a version, as bytes the state's owner wrote and can read back.
public struct LogSnapshot: Sendable, Equatable {
    public var version: UInt64
    public var bytes: [UInt8]

    public init(version: UInt64, bytes: [UInt8]) {
        self.version = version
        self.bytes = bytes
    }
}

/// Why the change log failed.
public enum ChangeLogError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A file or directory could not be read, written or synced.
    case io(path: String, operation: String, errno: Int32)
    /// Stored bytes that are not a record or snapshot this log wrote (other than a torn last record,
    /// which is dropped on open).
    case corrupt(path: String, offset: Int, reason: String)
    /// The log was closed.
    case closed
    /// A call into the NATS C client failed: the function and what it said.
    case nats(function: String, reason: String)
    /// The replicated stream ends before the sequence this node's snapshot was taken at: the stream
    /// was deleted or replaced, and replaying it would silently lose changes.
    case streamBehind(stream: String, lastSequence: UInt64, snapshotSequence: UInt64)
    /// The replicated stream no longer holds the records right after this node's snapshot (they were
    /// purged or aged out): replaying from what is left would skip changes. Copy a newer snapshot from
    /// another node into the data folder.
    case streamTrimmed(stream: String, firstSequence: UInt64, snapshotSequence: UInt64)
    /// This node's data at version 0 is not the data the replicated stream's changes were made to:
    /// every node of a cluster must start from the same `--data` (or `--synthetic N`).
    case initialDataDiffers(stream: String, expected: String, found: String)
    /// A record too large for the transport that carries it.
    case recordTooLarge(bytes: Int, limit: Int)

    public var description: String {
        switch self {
        case .io(let path, let operation, let errno): "\(operation) \(path) failed: errno \(errno)"
        case .corrupt(let path, let offset, let reason): "\(path) is damaged at byte \(offset): \(reason)"
        case .closed: "the change log is closed"
        case .nats(let function, let reason): "\(function) failed: \(reason)"
        case .streamBehind(let stream, let last, let snapshot):
            "stream \(stream) ends at sequence \(last), before this node's snapshot at sequence \(snapshot)"
        case .streamTrimmed(let stream, let first, let snapshot):
            "stream \(stream) starts at sequence \(first), but this node's snapshot needs every record after \(snapshot)"
        case .initialDataDiffers(let stream, let theirs, let ours):
            "this node starts from other data than stream \(stream) was made for (\(ours), the stream's: \(theirs)); start every node from the same --data"
        case .recordTooLarge(let bytes, let limit): "a record of \(bytes) bytes is over the limit of \(limit) bytes"
        }
    }
}
