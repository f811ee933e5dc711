/// How a ``Pacer`` sizes and spaces batches.
public struct PacerOptions: Sendable, Equatable {
    /// Starting rate, markers per millisecond; acks move it between ``minPace`` and ``maxPace``.
    public var pace: Double
    /// Batches sent and not yet acknowledged, at most.
    public var window: Int
    /// Time a batch is meant to cover: a batch holds about `pace × interval` markers.
    public var interval: Duration
    /// Bounds of the adapted rate, markers per millisecond.
    public var minPace: Double
    public var maxPace: Double
    /// Share of the client's time the pacer aims to fill with applying markers (0...1]: the rate
    /// settles at `clientShare / (reported ms per marker)`.
    public var clientShare: Double
    /// Weight of the newest ack in the low-pass filter over the rate (0...1].
    public var smoothing: Double
    /// Largest number of markers in one batch, except that a split or merge group is never cut.
    public var maxBatch: Int

    public init(
        pace: Double = 0.5, window: Int = 4, interval: Duration = .milliseconds(50), minPace: Double = 0.05,
        maxPace: Double = 50, clientShare: Double = 0.5, smoothing: Double = 0.3, maxBatch: Int = 2000
    ) {
        precondition(
            pace > 0 && window > 0 && interval > .zero && minPace > 0 && maxPace >= minPace,
            "pacer options must be positive")
        self.pace = min(max(pace, minPace), maxPace)
        self.window = window
        self.interval = interval
        self.minPace = minPace
        self.maxPace = maxPace
        self.clientShare = clientShare
        self.smoothing = smoothing
        self.maxBatch = maxBatch
    }
}
