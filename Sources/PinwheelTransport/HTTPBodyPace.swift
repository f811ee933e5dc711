/// When a request body must be cut: once the request's deadline has passed, or once it falls behind
/// the minimum rate after a short grace. A body trickled one byte at a time would otherwise hold its
/// connection for as long as the sender likes: lws 4.1.6 re-arms its body timeout at every chunk.
struct HTTPBodyPace: Equatable {
    enum Verdict: Equatable {
        case onTime
        /// The request's deadline passed with body still to come.
        case pastDeadline
        /// Fewer bytes than `minimumRate` per second since the grace ended.
        case tooSlow
    }

    /// How long after the headers the rate starts to count: a short body may arrive in one late segment.
    static let grace: Duration = .seconds(2)

    let started: ContinuousClock.Instant
    let deadline: ContinuousClock.Instant
    /// Bytes per second; 0 checks the deadline only.
    let minimumRate: Int

    /// The verdict for a body of which `received` bytes have arrived by `now`.
    func verdict(received: Int, at now: ContinuousClock.Instant) -> Verdict {
        if now >= deadline { return .pastDeadline }
        let counted = now - started - Self.grace
        guard minimumRate > 0, counted > .zero else { return .onTime }
        let owed =
            Double(minimumRate) * (Double(counted.components.seconds) + Double(counted.components.attoseconds) / 1e18)
        return Double(received) < owed ? .tooSlow : .onTime
    }

    /// The time left for the body once the headers took at most `headerAllowance` of `requestDeadline`.
    static func bodyAllowance(requestDeadline: Duration, headerAllowance: Duration) -> Duration {
        requestDeadline - headerAllowance
    }

    /// The part of `requestDeadline` the headers may take: half, up to lws's usual 10 s. Whole seconds.
    static func headerAllowance(requestDeadline: Duration) -> Duration {
        .seconds(max(1, min(10, requestDeadline.components.seconds / 2)))
    }
}
