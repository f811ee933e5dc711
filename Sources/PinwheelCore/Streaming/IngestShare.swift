/// How producers and viewers share the CPU: while viewers are connected, taking changes in — reading
/// and checking them, applying them to the table, laying them over the index — gets at most `share`
/// of one core, split evenly among the producers that sent something in the last ``activeWindow``.
/// Each producer has a balance of CPU time: its batches' cost is charged to it, it earns its part of
/// the share as time passes, up to ``burst``, and a producer in debt waits until it is paid off. With
/// no viewer connected producers do not wait (and their debt is forgiven), so a server alone takes
/// changes as fast as its cores allow.
///
/// Driven by a ``PinwheelClock``: tests use a manual one.
public struct IngestShare<Clock: PinwheelClock> {
    /// A producer that sent nothing for this long no longer counts among those sharing.
    public static var activeWindow: Duration { .seconds(1) }
    /// CPU time a producer may bank while it sends less than its part.
    public static var burst: Duration { .milliseconds(50) }
    /// The shortest wait ``wait(producer:viewers:)`` gives.
    public static var shortestWait: Duration { .milliseconds(1) }

    private struct Producer {
        var balance: Duration = IngestShare.burst
        var updated: Clock.Instant
        var lastSent: Clock.Instant
    }

    public let clock: Clock
    /// Fraction of one core, above 0.
    public let share: Double
    private var producers: [String: Producer] = [:]

    public init(clock: Clock, share: Double) {
        precondition(share > 0, "a share above 0")
        self.clock = clock
        self.share = share
    }

    /// Producers that sent within ``activeWindow``.
    public var activeProducers: Int {
        let now = clock.now
        return producers.values.reduce(0) { $0 + ($1.lastSent.duration(to: now) < Self.activeWindow ? 1 : 0) }
    }

    /// How long `producer` waits before its next batch is taken in; nil when it may go now. Counts the
    /// producer as active from now.
    /// - Parameter viewers: whether any viewer is connected.
    public mutating func wait(producer: String, viewers: Bool) -> Duration? {
        let now = clock.now
        forgetIdle(at: now)
        var p = producers[producer] ?? Producer(updated: now, lastSent: now)
        p.lastSent = now
        let active = Double(max(1, activeProducers + (producers[producer] == nil ? 1 : 0)))
        let rate = share / active
        if viewers {
            p.balance = min(Self.burst, p.balance + p.updated.duration(to: now) * rate)
        } else {
            p.balance = Self.burst
        }
        p.updated = now
        producers[producer] = p
        guard p.balance < .zero else { return nil }
        // The debt paid off at this producer's part of the share; a wait shorter than a millisecond
        // would cost more in waking up than it shares.
        return max(Self.shortestWait, (Duration.zero - p.balance) * (1 / rate))
    }

    /// Charges `cpu`, what taking in a batch of `producer` cost, to its balance.
    public mutating func charge(producer: String, _ cpu: Duration) {
        guard var p = producers[producer] else { return }
        p.balance -= cpu
        producers[producer] = p
    }

    /// Drops producers idle for ten windows, whose balance is full again anyway.
    private mutating func forgetIdle(at now: Clock.Instant) {
        guard producers.count > 16 else { return }
        producers = producers.filter { $0.value.lastSent.duration(to: now) < Self.activeWindow * 10 }
    }
}
