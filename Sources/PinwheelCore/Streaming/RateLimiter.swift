/// Coalesces a client's viewports to at most `perSecond` per second: the latest one wins, and the
/// last one is always processed.
///
/// A state machine over a ``PinwheelClock``: ``offer(_:)`` and ``poll()`` return an ``Action``. On
/// `.wait(until:)`, call ``poll()`` at that instant (one timer per session is enough: every wait names
/// the same instant until it passes).
public struct RateLimiter<Clock: PinwheelClock, Value: Sendable>: Sendable {
    /// What the server should do next.
    public enum Action: Sendable {
        /// Process this value now.
        case process(Value)
        /// A value is held; call ``poll()`` at this instant.
        case wait(until: Clock.Instant)
        /// Nothing held.
        case idle
    }

    public let clock: Clock
    /// Least time between two processed values.
    public let spacing: Duration
    private var lastProcessed: Clock.Instant?
    /// The latest value offered and not yet processed.
    public private(set) var pending: Value?

    /// - Parameters:
    ///   - clock: where time comes from.
    ///   - perSecond: values processed per second at most (default 10).
    public init(clock: Clock, perSecond: Double = 10) {
        precondition(perSecond > 0, "a rate must be positive")
        self.clock = clock
        spacing = .nanoseconds(Int64((1e9 / perSecond).rounded()))
    }

    /// Offers a value; it replaces any value still held.
    public mutating func offer(_ value: Value) -> Action {
        pending = value
        return poll()
    }

    /// Processes the held value if its time has come.
    public mutating func poll() -> Action {
        guard let value = pending else { return .idle }
        let now = clock.now
        if let last = lastProcessed {
            let due = last.advanced(by: spacing)
            if now < due { return .wait(until: due) }
        }
        pending = nil
        lastProcessed = now
        return .process(value)
    }
}

extension RateLimiter.Action: Equatable where Value: Equatable {}
