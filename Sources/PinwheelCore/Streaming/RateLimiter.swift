/// Coalesces a client's viewports to at most `perSecond` per second on average: the latest one wins,
/// and the last one is always processed.
///
/// A generic cell-rate algorithm: each processed value moves a theoretical arrival time one
/// `spacing` on, and a value is held only when it comes more than `burst - 1` spacings ahead of it.
/// So a client sending at the limit with network jitter is never held back (with a strict spacing
/// half its viewports waited a few milliseconds for a timer), while over any span T at most
/// `T × perSecond + burst` values are processed.
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
    /// Average time between two processed values.
    public let spacing: Duration
    /// How far ahead of the average rate values may come: `(burst - 1) × spacing`.
    public let tolerance: Duration
    /// When the next value would be due at exactly the average rate; nil before the first.
    private var theoreticalArrival: Clock.Instant?
    /// The latest value offered and not yet processed.
    public private(set) var pending: Value?

    /// - Parameters:
    ///   - clock: where time comes from.
    ///   - perSecond: values processed per second on average (default 10).
    ///   - burst: values that may pass back to back after a quiet spell (default 2), which is also
    ///     how much jitter a client at the limit may have: up to one spacing.
    public init(clock: Clock, perSecond: Double = 10, burst: Int = 2) {
        precondition(perSecond > 0, "a rate must be positive")
        precondition(burst >= 1, "a burst is at least one value")
        self.clock = clock
        spacing = .nanoseconds(Int64((1e9 / perSecond).rounded()))
        tolerance = spacing * (burst - 1)
    }

    /// Offers a value; it replaces any value still held.
    public mutating func offer(_ value: Value) -> Action {
        pending = value
        return poll()
    }

    /// Takes a request that cannot wait (it is answered or refused, never held) if the rate allows it
    /// now, counting it as a processed value.
    /// - Returns: nil when taken; else the instant from which it would be.
    public mutating func admit() -> Clock.Instant? {
        let now = clock.now
        if let due = theoreticalArrival {
            let earliest = due.advanced(by: .zero - tolerance)
            if now < earliest { return earliest }
            theoreticalArrival = max(due, now).advanced(by: spacing)
        } else {
            theoreticalArrival = now.advanced(by: spacing)
        }
        return nil
    }

    /// Processes the held value if its time has come.
    public mutating func poll() -> Action {
        guard let value = pending else { return .idle }
        let now = clock.now
        if let due = theoreticalArrival {
            let earliest = due.advanced(by: .zero - tolerance)
            if now < earliest { return .wait(until: earliest) }
            theoreticalArrival = max(due, now).advanced(by: spacing)
        } else {
            theoreticalArrival = now.advanced(by: spacing)
        }
        pending = nil
        return .process(value)
    }
}

extension RateLimiter.Action: Equatable where Value: Equatable {}
