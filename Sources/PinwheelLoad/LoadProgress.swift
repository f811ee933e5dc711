/// Running totals, sampled once a second for the progress line and the per-second rates.
public struct LoadProgress: Sendable, Equatable, Codable {
    public var elapsed: Duration = .zero
    public var open = 0
    public var viewportsSent = 0
    public var viewportsAnswered = 0
    public var batches = 0
    public var markers = 0
    public var bytes = 0
    public var errors = 0

    public init() {}

    /// Adds one client's figures.
    mutating func add(_ client: LoadClient) {
        if client.phase == .open || client.phase == .touring { open += 1 }
        viewportsSent += client.figures.viewportsSent
        viewportsAnswered += client.figures.answered
        batches += client.figures.batches
        markers += client.figures.markers
        bytes += client.figures.bytes
        errors += client.figures.errors.values.reduce(0, +)
    }

    /// Adds another process's totals at the same second (its `elapsed` is left out).
    mutating func add(_ other: LoadProgress) {
        open += other.open
        viewportsSent += other.viewportsSent
        viewportsAnswered += other.viewportsAnswered
        batches += other.batches
        markers += other.markers
        bytes += other.bytes
        errors += other.errors
    }

    /// One line for stderr, e.g. `12s  1000 open  9.8k vp/s  …` given the sample a second before.
    public func line(since previous: LoadProgress, clients: Int) -> String {
        let seconds = max(
            0.001,
            Double((elapsed - previous.elapsed).components.seconds)
                + Double((elapsed - previous.elapsed).components.attoseconds) * 1e-18)
        func rate(_ now: Int, _ before: Int) -> String { LoadTable.compact(Double(now - before) / seconds) }
        return "\(elapsed.components.seconds)s  \(open)/\(clients) open  "
            + "\(rate(viewportsSent, previous.viewportsSent)) viewports/s  \(rate(batches, previous.batches)) batches/s  "
            + "\(rate(markers, previous.markers)) markers/s  "
            + "\(LoadTable.compact(Double(bytes - previous.bytes) / seconds))B/s  errors \(errors)"
    }
}
