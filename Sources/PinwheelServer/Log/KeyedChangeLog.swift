import PinwheelCore

/// What a producer's request asks of an append besides its changes.
public struct AppendRequest: Sendable {
    /// The producer's idempotency key: a record with the same key appended within the log's
    /// duplicate window is not appended again. Nil: the request is appended however often it comes.
    public var key: String?
    /// Asked right before the record leaves for the log: why it must not be appended any more (its
    /// answer has been given up), nil when it may still be.
    public var expired: @Sendable () -> String?

    public init(key: String? = nil, expired: @escaping @Sendable () -> String? = { nil }) {
        self.key = key
        self.expired = expired
    }
}

/// What became of a keyed append.
public enum AppendOutcome: Sendable, Equatable {
    /// Appended now: the version of its last change.
    case appended(UInt64)
    /// A record with the same key was appended before, and this one was not: the version of that
    /// record's last change (or, once that is no longer known, a later version that includes it).
    case duplicate(UInt64)
    /// Not appended: the request expired before its record left (the reason).
    case dropped(String)
}

/// A change log that recognises a producer's retries itself, by key, however many of its nodes the
/// retries reach (the replicated log: JetStream de-duplicates by message id).
public protocol KeyedChangeLog: ChangeLog {
    /// How long a key is remembered after its record was appended.
    var duplicateWindow: Duration { get }

    /// Appends changes as one record unless a record with the same key was appended within the
    /// duplicate window, or the request expired before the record left. `done` as for
    /// ``ChangeLog/append(_:done:)``.
    func append(
        _ changes: [Change], request: AppendRequest,
        done: @escaping @Sendable (Result<AppendOutcome, ChangeLogError>) -> Void)
}

/// A change log that can become unusable while it runs (the replicated log losing its server):
/// `/healthz` and `/metrics` report it.
public protocol ChangeLogHealth: AnyObject, Sendable {
    /// Why the log cannot take or deliver changes now, nil when it can.
    var problem: String? { get }
    /// Prometheus text lines about the log's connection, each ending in a newline.
    var metricsText: String { get }
}
