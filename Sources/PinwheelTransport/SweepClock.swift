/// The clock of the server's sweeps over its connections (keepalive, policing): one every
/// ``interval``, counted, so noting that a peer spoke is a store and not a clock read. Lws service
/// thread only.
struct SweepClock {
    static let interval: Duration = .milliseconds(250)
    static let sweepsPerSecond: UInt32 = 4

    /// Sweeps so far.
    private(set) var count: UInt32 = 0
    private var next: ContinuousClock.Instant

    init(now: ContinuousClock.Instant = .now) {
        next = now + Self.interval
    }

    /// True when a sweep is due at `now`; counts it. A loop busy for several intervals sweeps once.
    mutating func isDue(at now: ContinuousClock.Instant) -> Bool {
        guard now >= next else { return false }
        count &+= 1
        next += Self.interval
        if next <= now { next = now + Self.interval }
        return true
    }

    /// Sweeps in `duration`, rounded up.
    static func sweeps(in duration: Duration) -> UInt32 {
        UInt32(clamping: Int((duration / interval).rounded(.up)))
    }
}
