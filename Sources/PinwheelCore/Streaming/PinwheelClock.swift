import Synchronization

/// A source of the current instant. The streaming state machines read time only through it, so the
/// server passes `ContinuousClock()` and tests pass a ``ManualClock`` they advance by hand.
public protocol PinwheelClock: Sendable {
    associatedtype Instant: InstantProtocol where Instant.Duration == Duration
    /// The current instant.
    var now: Instant { get }
}

extension ContinuousClock: PinwheelClock {}

/// A clock that moves only when told to; copies share one time.
public final class ManualClock: PinwheelClock {
    /// An instant: the time since the clock was made.
    public struct Instant: InstantProtocol {
        public var offset: Duration

        public init(offset: Duration) { self.offset = offset }

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    private let current = Mutex(Duration.zero)

    public init() {}

    public var now: Instant { Instant(offset: current.withLock { $0 }) }

    /// Moves time forward.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "a clock does not go back")
        current.withLock { $0 += duration }
    }

    /// Moves time forward to an instant (no-op if it is already past).
    public func advance(to instant: Instant) {
        current.withLock { $0 = max($0, instant.offset) }
    }
}

extension Duration {
    /// The duration in milliseconds, as a double.
    var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }

    /// A duration from fractional milliseconds.
    static func milliseconds(fractional ms: Double) -> Duration {
        .nanoseconds(Int64((ms * 1e6).rounded(.up)))
    }
}
