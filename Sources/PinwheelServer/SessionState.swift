import PinwheelCore
import PinwheelTransport

/// A session's state machine: decoded messages in, messages to send and timers out.
///
/// It owns the pacer (which holds what the client has and the unsent rest of the served viewport's
/// difference), the viewport rate limiter and the current algorithm. The costly step, clustering a
/// viewport and planning its batches, runs once per turn in ``flush(output:)``, for the latest
/// viewport the limiter released: viewports superseded within a turn are never computed. Worker
/// threads only (see ``Session``).
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
    /// The viewport the limiter released this turn, computed at ``flush(output:)``.
    private var due: Arrival?
    /// The viewport being served had more features than `maxFeatures`: the count, until its last batch.
    private var capped: (seq: UInt64, available: Int)?
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
    /// - Returns: the message's type for the metrics ("invalid" when it could not be read).
    mutating func received(
        _ bytes: [UInt8], at receivedAt: ContinuousClock.Instant, clusterers: Clusterers, output: inout SessionOutput
    ) -> String {
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(bytes)
        } catch {
            encoder.error(error)
            output.send("error", Array(encoder.message))
            return "invalid"
        }
        switch message {
        case .viewport(let viewport):
            serve(limiter.offer((viewport, receivedAt)), output: &output)
            return "viewport"
        case .ack(let ack):
            if case .heldByWindow(let elapsed, let since) = firstBatch {
                // The ack may have been stamped on the service thread before this worker parked
                // the batch: then there was no wait.
                let resumed = max(receivedAt, since)
                output.windowWaits.append(resumed - since)
                firstBatch = .running(elapsed: elapsed, since: resumed)
            }
            carryOut(pacer.acknowledge(ack), output: &output)
            return "ack"
        case .expand(let id):
            expand(id, output: &output)
            return "expand"
        case .settings(let settings):
            output.presence = settings.presence
            guard let newAlgorithm = settings.algorithm else { return "settings" }
            algorithm = newAlgorithm
            clusterer = clusterers.clusterer(for: algorithm)
            context = FeatureContext(clusterer: clusterer)
            output.send("hello", hello())
            // Re-serve the current view with the new algorithm, diffed against what the client has,
            // through the limiter like a viewport, so flipping algorithms costs no more than panning.
            // A newer viewport held or released already is served with the new algorithm anyway.
            if let served, due == nil, limiter.pending == nil {
                serve(limiter.offer((served, receivedAt)), output: &output)
            }
            return "settings"
        }
    }

    /// The end of a turn: clusters and plans the latest viewport released during it.
    mutating func flush(output: inout SessionOutput) {
        guard let arrival = due else { return }
        due = nil
        show(arrival.viewport, receivedAt: arrival.receivedAt, output: &output)
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
            due = (arrival.viewport, heldBack ? .now : arrival.receivedAt)
        case .wait(let until):
            wake(at: until, output: &output)
        case .idle:
            break
        }
    }

    /// Clusters a viewport and hands it to the pacer, which drops the unsent rest of the previous one
    /// and diffs against what was actually sent. Past `maxFeatures`, keeps those nearest the centre.
    private mutating func show(_ viewport: ViewportMessage, receivedAt: ContinuousClock.Instant, output: inout SessionOutput) {
        served = viewport
        output.served = viewport
        clusterer.features(in: viewport.bbox, zoom: viewport.zoom, into: &features)
        let available = FeatureCap.keepNearest(
            &features, limit: configuration.maxFeatures, centre: viewport.bbox.center)
        capped = available > features.count ? (viewport.seq, available) : nil
        firstBatch = .running(elapsed: .zero, since: receivedAt)
        carryOut(pacer.show(seq: viewport.seq, features: features, viewport: viewport.bbox), output: &output)
    }

    /// Sends what the pacer allows now, and asks for a timer when it wants to wait.
    private mutating func carryOut(_ first: Pacer<ContinuousClock>.Action, output: inout SessionOutput) {
        var action = first
        while case .send(let batch) = action {
            var cap: BatchMessage.Capped?
            if batch.done, let capped, capped.seq == batch.seq {
                cap = BatchMessage.Capped(limit: configuration.maxFeatures, available: capped.available)
            }
            encoder.batch(batch, capped: cap, context: context)
            output.send("batch", Array(encoder.message))
            if case .running(let elapsed, let since) = firstBatch {
                output.firstBatchLatencies.append(elapsed + (.now - since))
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
        let info = dataset.helloInfo(aggregates: clusterer.aggregates)
        let limits = HelloMessage.Limits(
            viewportHz: configuration.viewportHz, pace: configuration.pace, window: configuration.window,
            maxMessageBytes: configuration.maxMessageBytes, maxFeatures: configuration.maxFeatures)
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
