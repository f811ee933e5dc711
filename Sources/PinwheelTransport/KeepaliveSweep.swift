/// The server's keepalive: a connection silent for `pingAfter` gets a ping, one silent for
/// `hangUpAfter` is dropped. Time is counted in sweeps, so noting that a peer spoke is a store,
/// not a clock read, and a connection that keeps talking is never pinged.
///
/// lws 4.1.6 has a keepalive of its own (the vhost's retry policy), but it keeps every connection's
/// deadline in one list sorted by time and walks it from the front each time a deadline moves: as
/// the connection opens, and at each ping and pong. A new deadline is the latest, so every walk is
/// the whole list: with 10,000 connections those walks took a quarter of the server's CPU
/// (docs/libwebsockets.md). This sweep visits each connection once per `interval` instead, and lws's
/// is turned off (``LWSContextParts/noValidityTimer(in:)``). Lws service thread only.
struct KeepaliveSweep {
    /// How often the connections are looked at; pings and hang-ups come up to this late.
    static let interval = SweepClock.interval

    enum Verdict: Equatable {
        /// Heard from recently enough, or already pinged and not yet overdue.
        case quiet
        /// Silent for `pingAfter`: send a ping.
        case ping
        /// Silent for `hangUpAfter`: drop the connection.
        case hangUp
    }

    private let pingAfterSweeps: UInt32
    private let hangUpAfterSweeps: UInt32
    /// The sweeps: the clock the connections' `heardAtSweep` is read against.
    private var clock: SweepClock

    init(_ keepalive: Keepalive, now: ContinuousClock.Instant = .now) {
        pingAfterSweeps = SweepClock.sweeps(in: keepalive.pingAfter)
        hangUpAfterSweeps = SweepClock.sweeps(in: keepalive.hangUpAfter)
        clock = SweepClock(now: now)
    }

    /// Sweeps so far.
    var count: UInt32 { clock.count }

    /// True when a sweep is due at `now`; counts it. A loop busy for several intervals sweeps once.
    mutating func isDue(at now: ContinuousClock.Instant) -> Bool { clock.isDue(at: now) }

    /// What to do with a connection last heard from at sweep `heard`, pinged since or not.
    func verdict(heard: UInt32, pinged: Bool) -> Verdict {
        let silent = count &- heard
        if silent >= hangUpAfterSweeps { return .hangUp }
        if silent >= pingAfterSweeps && !pinged { return .ping }
        return .quiet
    }
}
