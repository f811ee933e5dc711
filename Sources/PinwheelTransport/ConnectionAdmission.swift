/// The server's connection cap: lws's sockets (WebSocket and HTTP alike) are counted as lws creates
/// and destroys them, and a new one is refused at once when the count is at the cap or the process
/// gave up its spare descriptor (``AcceptFailures``). Refusals are logged at most once a second, with
/// their count. Lws service thread only.
struct ConnectionAdmission {
    /// Most connections held at once.
    let cap: Int
    /// Connections lws holds now.
    private(set) var open = 0
    /// Connections refused since start.
    private(set) var refused = 0
    private var refusedSinceLog = 0
    private var lastLogged: ContinuousClock.Instant?

    init(cap: Int) {
        self.cap = cap
    }

    /// Whether a connection just accepted may stay; counts a refusal.
    mutating func admits(starved: Bool) -> Bool {
        guard open >= cap || starved else { return true }
        refused += 1
        refusedSinceLog += 1
        return false
    }

    /// lws made a connection's object.
    mutating func created() { open += 1 }

    /// lws freed a connection's object.
    mutating func destroyed() { open = max(0, open - 1) }

    /// The line to log about refusals, when there were some and the last line is a second old.
    mutating func logLine(now: ContinuousClock.Instant) -> String? {
        guard refusedSinceLog > 0, lastLogged.map({ now - $0 >= .seconds(1) }) ?? true else { return nil }
        defer {
            refusedSinceLog = 0
            lastLogged = now
        }
        return "refused \(refusedSinceLog) connections since the last report: \(open) open, the cap is \(cap) "
            + "(the descriptor limit less a reserve; see docs/security.md)\n"
    }
}
