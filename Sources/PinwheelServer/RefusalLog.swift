import Logging
import Synchronization

/// Logs refusals at notice, at most one line per `interval`: a page refused in a reconnect loop, or
/// a scan, cannot flood the log. The line after a quiet spell says how many were left out. Any thread.
final class RefusalLog: Sendable {
    private struct State {
        var last: ContinuousClock.Instant?
        var suppressed = 0
    }

    private let logger: Logger
    private let interval: Duration
    private let state = Mutex(State())

    init(logger: Logger, interval: Duration = .seconds(1)) {
        self.logger = logger
        self.interval = interval
    }

    /// Notes one refusal; logs it unless a line went out less than `interval` ago.
    /// - Returns: the line logged, nil when this one was left out.
    @discardableResult
    func note(_ message: String, now: ContinuousClock.Instant = .now) -> String? {
        let left = state.withLock { state -> Int? in
            if let last = state.last, now - last < interval {
                state.suppressed += 1
                return nil
            }
            defer { state.suppressed = 0 }
            state.last = now
            return state.suppressed
        }
        guard let left else { return nil }
        let more = left > 0 ? " (\(left) more refused since the last line)" : ""
        logger.notice("\(message)\(more)")
        return message + more
    }
}
