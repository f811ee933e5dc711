import PinwheelTransport

/// Simulated tourists inside `pinwheel serve --bots N`: real WebSocket sessions on the server's own
/// port, touring like `pinwheel load`'s clients, so one browser with presence on sees a lively map.
public final class TouristBots: Sendable {
    private let group: LoadGroup

    /// Starts `count` bots connecting to `url` over `ramp`.
    /// - Parameters:
    ///   - viewportHz: viewports per second while a bot moves; people move more slowly than a load test.
    ///   - origin: the Origin header the server accepts (its own origin).
    /// - Throws: `LoadError` when the count is out of range or the client cannot start.
    public init(
        count: Int, url: String, origin: String?, viewportHz: Double = 2, trace: TourTrace = .mixed, seed: UInt64 = 1,
        ramp: Duration = .seconds(2)
    ) throws(LoadError) {
        var options = LoadOptions(url: url)
        options.clients = count
        options.viewportHz = viewportHz
        options.trace = trace
        options.seed = seed
        options.ramp = ramp
        options.threads = 1
        // The server in this process may run libev; a second libev context would abort.
        options.eventLoop = .poll
        options.deflate = false
        try options.validate()
        group = LoadGroup(
            indices: Array(0..<count), options: options, origin: origin, start: .now, keepsSamples: false)
        do { try group.start() } catch { throw .clientFailed("\(error)") }
    }

    /// Bots connected and touring now.
    public var touring: Int {
        group.state.withLock { s in s.clients.filter { $0.phase == .touring }.count }
    }

    /// Closes every bot with 1000. Any thread, once.
    public func stop() {
        group.stop()
    }
}
