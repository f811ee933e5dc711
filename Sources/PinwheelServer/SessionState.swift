import PinwheelCore
import PinwheelTransport

/// A session's state machine: decoded messages in, messages to send and timers out.
///
/// It owns the pacer (which holds what the client has and the unsent rest of the served viewport's
/// difference), the viewport rate limiter and the current algorithm. Worker threads only (see
/// ``Session``).
struct SessionState {
    /// A viewport and when the service thread received it.
    typealias Arrival = (viewport: ViewportMessage, receivedAt: ContinuousClock.Instant)

    let connection: ConnectionID
    let configuration: ServerConfiguration
    let dataset: LoadedDataset
    /// Clustering options announced in `hello`.
    let options: HelloMessage.Options
    private(set) var algorithm: Algorithm
    private var clusterer: any Clusterer
    /// Properties and sums of the current clusterer, for encoding features.
    private var context: FeatureContext
    var closed = false

    /// The viewport being served, kept for `settings`, which re-serves it.
    private var served: ViewportMessage?
    /// The clock of the served viewport's first batch while it is unsent; nil once it is sent.
    private var firstBatch: FirstBatchClock?
    private var pacer: Pacer<ContinuousClock>
    private var limiter: RateLimiter<ContinuousClock, Arrival>
    /// When the timer already asked for fires; nil when none is pending.
    private var tickDue: ContinuousClock.Instant?
    private var features: [Feature] = []
    private var encoder = MessageEncoder(capacity: 16 * 1024)

    init(
        connection: ConnectionID, configuration: ServerConfiguration, dataset: LoadedDataset,
        options: HelloMessage.Options, algorithm: Algorithm, clusterer: any Clusterer
    ) {
        self.connection = connection
        self.configuration = configuration
        self.dataset = dataset
        self.options = options
        self.algorithm = algorithm
        self.clusterer = clusterer
        context = FeatureContext(clusterer: clusterer)
        let clock = ContinuousClock()
        pacer = Pacer(clock: clock, options: PacerOptions(pace: configuration.pace, window: configuration.window))
        limiter = RateLimiter(clock: clock, perSecond: configuration.viewportHz)
    }

    /// The handshake is done: greet.
    mutating func opened(output: inout SessionOutput) {
        output.send("hello", hello())
    }

    /// A complete text message from the client.
    mutating func received(
        _ bytes: [UInt8], at receivedAt: ContinuousClock.Instant, clusterers: Clusterers, output: inout SessionOutput
    ) {
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(bytes)
        } catch {
            encoder.error(error)
            output.send("error", Array(encoder.message))
            return
        }
        switch message {
        case .viewport(let viewport):
            output.receivedType = "viewport"
            serve(limiter.offer((viewport, receivedAt)), output: &output)
        case .ack(let ack):
            output.receivedType = "ack"
            if case .heldByWindow(let elapsed, let since) = firstBatch {
                // The ack may have been stamped on the service thread before this worker parked
                // the batch: then there was no wait.
                let resumed = max(receivedAt, since)
                output.windowWait = resumed - since
                firstBatch = .running(elapsed: elapsed, since: resumed)
            }
            carryOut(pacer.acknowledge(ack), output: &output)
        case .expand(let id):
            output.receivedType = "expand"
            expand(id, output: &output)
        case .settings(let settings):
            output.receivedType = "settings"
            output.presence = settings.presence
            guard let newAlgorithm = settings.algorithm else { return }
            algorithm = newAlgorithm
            clusterer = clusterers.clusterer(for: algorithm)
            context = FeatureContext(clusterer: clusterer)
            output.send("hello", hello())
            // Re-serve the current view with the new algorithm, diffed against what the client has.
            if let served { show(served, receivedAt: receivedAt, output: &output) }
        }
    }

    /// A timer fired: a held-back viewport may be due, or the pacer may send again.
    mutating func tick(output: inout SessionOutput) {
        tickDue = nil
        serve(limiter.poll(), heldBack: true, output: &output)
        carryOut(pacer.poll(), output: &output)
    }

    /// Carries out the rate limiter's decision.
    /// - Parameter heldBack: true when the viewport waited for the limiter's timer; its latency then
    ///   counts from its release, as `viewportHz` (not the server's speed) decided the wait.
    private mutating func serve(
        _ action: RateLimiter<ContinuousClock, Arrival>.Action, heldBack: Bool = false, output: inout SessionOutput
    ) {
        switch action {
        case .process(let arrival):
            show(arrival.viewport, receivedAt: heldBack ? .now : arrival.receivedAt, output: &output)
        case .wait(let until):
            wake(at: until, output: &output)
        case .idle:
            break
        }
    }

    /// Clusters a viewport and hands it to the pacer, which drops the unsent rest of the previous one
    /// and diffs against what was actually sent.
    private mutating func show(_ viewport: ViewportMessage, receivedAt: ContinuousClock.Instant, output: inout SessionOutput) {
        served = viewport
        output.served = viewport
        clusterer.features(in: viewport.bbox, zoom: viewport.zoom, into: &features)
        firstBatch = .running(elapsed: .zero, since: receivedAt)
        carryOut(pacer.show(seq: viewport.seq, features: features, viewport: viewport.bbox), output: &output)
    }

    /// Sends what the pacer allows now, and asks for a timer when it wants to wait.
    private mutating func carryOut(_ first: Pacer<ContinuousClock>.Action, output: inout SessionOutput) {
        var action = first
        while case .send(let batch) = action {
            encoder.batch(batch, context: context)
            output.send("batch", Array(encoder.message))
            if case .running(let elapsed, let since) = firstBatch {
                output.firstBatchLatency = elapsed + (.now - since)
                firstBatch = nil
            }
            action = pacer.poll()
        }
        if case .wait(let until) = action { wake(at: until, output: &output) }
        if case .idle = action, pacer.isWindowFull, case .running(let elapsed, let since) = firstBatch {
            let now = ContinuousClock.now
            firstBatch = .heldByWindow(elapsed: elapsed + (now - since), since: now)
        }
    }

    private mutating func expand(_ id: FeatureID, output: inout SessionOutput) {
        guard let expansion = clusterer.expansion(of: id, zoom: served?.zoom ?? 0) else {
            encoder.error(WireError(.unknownFeature, field: "id", message: "no feature has id \(id)"))
            output.send("error", Array(encoder.message))
            return
        }
        encoder.expansion(id: id, expansion, context: context)
        output.send("expansion", Array(encoder.message))
    }

    /// Asks for a tick at `instant` unless one is already due no later.
    private mutating func wake(at instant: ContinuousClock.Instant, output: inout SessionOutput) {
        if let due = tickDue, due <= instant { return }
        tickDue = instant
        output.wakeAt = instant
    }

    private mutating func hello() -> [UInt8] {
        let info = HelloMessage.DatasetInfo(
            name: dataset.name, points: dataset.dataset.count, bounds: dataset.bounds, sumColumns: clusterer.sumColumns)
        let limits = HelloMessage.Limits(
            viewportHz: configuration.viewportHz, pace: configuration.pace, window: configuration.window,
            maxMessageBytes: configuration.maxMessageBytes)
        encoder.hello(
            HelloMessage(
                session: String(connection.rawValue, radix: 16), algorithm: algorithm, dataset: info,
                options: options, limits: limits))
        return Array(encoder.message)
    }
}

/// The server's own time on a viewport's first batch. It stops while the client's window holds the
/// batch: the client's acks, not the server, decide that wait, which is measured apart.
private enum FirstBatchClock {
    /// Running since `since`, after `elapsed` earlier.
    case running(elapsed: Duration, since: ContinuousClock.Instant)
    /// Stopped at `elapsed`; the window has held the batch since `since`.
    case heldByWindow(elapsed: Duration, since: ContinuousClock.Instant)
}
