/// Notices a client that sends more than `limit` messages a second for `seconds` seconds in a row.
///
/// Time is cut into one-second buckets from the first message; the verdict is `.close` as soon as
/// `seconds` consecutive buckets each hold more than `limit` messages. A quiet second starts over.
public struct FloodDetector<Clock: PinwheelClock>: Sendable {
    /// What to do with the connection.
    public enum Verdict: Equatable, Sendable {
        case allow
        /// Close the connection with this WebSocket close code and reason.
        case close(code: UInt16, reason: String)
    }

    /// The WebSocket close code for a policy violation.
    public static var policyViolation: UInt16 { 1008 }

    public let clock: Clock
    /// Messages per second tolerated.
    public let limit: Int
    /// Seconds over the limit, in a row, before closing.
    public let seconds: Int
    private var origin: Clock.Instant?
    private var bucket: Int64 = 0
    private var count = 0
    /// Completed buckets in a row over the limit.
    private var streak = 0

    public init(clock: Clock, limit: Int = 100, seconds: Int = 5) {
        self.clock = clock
        self.limit = limit
        self.seconds = seconds
    }

    /// Counts one message.
    /// - Returns: `.close` once the client has flooded for long enough.
    public mutating func record() -> Verdict {
        let now = clock.now
        guard let origin else {
            origin = now
            count = 1
            return verdict()
        }
        let elapsed = origin.duration(to: now).components.seconds
        if elapsed != bucket {
            // Close the old bucket; a skipped (empty) second breaks the streak.
            streak = count > limit && elapsed == bucket + 1 ? streak + 1 : 0
            bucket = elapsed
            count = 0
        }
        count += 1
        return verdict()
    }

    private func verdict() -> Verdict {
        if count > limit && streak + 1 >= seconds {
            return .close(
                code: Self.policyViolation,
                reason: "more than \(limit) messages/s for \(seconds) s")
        }
        return .allow
    }
}
