/// One viewer's session as a state machine: decoded client messages and timer ticks in, messages to
/// send and timers to set out (``SessionActions``). The server runs it on a worker thread and carries
/// out what it decides; tests drive it with a ``ManualClock`` and never sleep.
///
/// It owns the pacer (what the client has and the unsent rest of the served viewport's difference),
/// the viewport rate limiter and the current algorithm. The costly step, clustering a viewport and
/// planning its batches, runs in ``flush(actions:)`` for the latest viewport the limiter released, at
/// the end of a turn or before the next message of another kind: a viewport superseded by the next
/// one in the same turn is never computed.
public struct SessionMachine<Clock: PinwheelClock> {
    /// A viewport and when it was received.
    public typealias Arrival = (viewport: ViewportMessage, receivedAt: Clock.Instant)

    public let clock: Clock
    public let options: SessionOptions
    /// The id `hello` announces.
    public let session: String
    private let dataset: HelloMessage.DatasetInfo
    private let clusterOptions: HelloMessage.Options
    private let clusterers: @Sendable (Algorithm, EffectiveFilter) throws(WireError) -> any Clusterer
    public private(set) var algorithm: Algorithm
    /// The points this session's views are computed over: its scope AND the filter it set.
    public private(set) var filter: EffectiveFilter
    private var clusterer: any Clusterer
    /// The clusterer views are served from now.
    public var servingClusterer: any Clusterer { clusterer }
    /// Properties and sums of the current clusterer, for encoding features.
    private var context: FeatureContext

    /// The viewport being served, kept for `settings`, which re-serves it.
    private var served: ViewportMessage?
    /// The viewport the limiter released this turn, computed at ``flush(actions:)``.
    private var due: Arrival?
    /// The data changed: the served viewport is refreshed at ``flush(actions:)``, or once the viewer
    /// has stopped moving (``refreshWaitsForNextViewport``).
    private var refreshDue = false
    /// When the latest viewport message arrived.
    private var lastViewportAt: Clock.Instant?
    /// The data version of the clusterer the served viewport was last computed with, sent in its batches.
    private var servedVersion: UInt64 = 0
    /// The viewport being served had more features than `maxFeatures`: the count, until its last batch.
    private var capped: (seq: UInt64, available: Int)?
    /// The clock of the served viewport's first batch while it is unsent; nil once it is sent.
    private var firstBatch: FirstBatchClock?
    private var pacer: Pacer<Clock>
    private var limiter: RateLimiter<Clock, Arrival>
    /// `children` and `leaves` requests: at the viewports' rate, apart from them.
    private var contentLimiter: RateLimiter<Clock, Bool>
    /// When the timer already asked for fires; nil when none is pending.
    private var tickDue: Clock.Instant?
    /// The query's features, kept for capacity; a server lends each turn its worker's instead.
    private var features: [Feature] = []
    /// The ids leaving a moved view, likewise.
    private var leaving: [FeatureID] = []
    /// The box and zoom whose features the client has exactly once the pacer is done: a viewport
    /// moving within that zoom's level is served from what enters and leaves the view. Nil after a
    /// capped view, or once the data or the algorithm changed.
    private var shownView: (bbox: BBox, zoom: Double)?
    /// Its buffer, kept for capacity, is likewise swapped for the worker's during a turn.
    private var encoder: MessageEncoder
    /// Batches and expansions of a `pinwheel.v1+bin` session; nil for JSON sessions.
    private var binaryEncoder: BinaryMessageEncoder?
    /// What a reconnecting client said it still holds, taken as what it has at its first viewport.
    private var held: [HeldFeature] = []
    private var heldVersion: UInt64 = 0

    /// - Parameters:
    ///   - dataset: what `hello` says of the dataset (its `aggregates` come from the clusterer).
    ///   - clusterOptions: the clustering options `hello` announces.
    ///   - clusterers: the clusterer of each algorithm over the points an effective filter lets
    ///     through, shared by every session with that filter; an error when the server cannot hold a
    ///     new one (`filter-memory`), which a `settings` asking for it is answered with.
    ///   - algorithm: the session's first algorithm.
    ///   - scope: the points the session may ever see (its credentials'), ANDed with any filter it sets;
    ///     nil for every point.
    public init(
        clock: Clock, options: SessionOptions, session: String, dataset: HelloMessage.DatasetInfo,
        clusterOptions: HelloMessage.Options,
        clusterers: @escaping @Sendable (Algorithm, EffectiveFilter) throws(WireError) -> any Clusterer,
        algorithm: Algorithm, scope: FilterExpression? = nil
    ) {
        self.clock = clock
        self.options = options
        self.session = session
        self.dataset = dataset
        self.clusterOptions = clusterOptions
        self.clusterers = clusterers
        self.algorithm = algorithm
        filter = EffectiveFilter(scope: scope)
        // A server makes sure of a scope's index before it makes the session; should it still be
        // refused, the session shows no point rather than more than its scope.
        clusterer = (try? clusterers(algorithm, filter)) ?? Self.noPoints
        context = FeatureContext(clusterer: clusterer)
        // No buffers of their own: a turn encodes into its worker thread's (``swapScratch(_:)``).
        encoder = MessageEncoder(headroom: options.headroom, capacity: 0)
        if options.encoding == .binary {
            binaryEncoder = BinaryMessageEncoder(headroom: options.headroom, capacity: 0)
        }
        pacer = Pacer(
            clock: clock, options: PacerOptions(pace: options.pace, window: options.window), encoding: options.encoding)
        limiter = RateLimiter(clock: clock, perSecond: options.viewportHz)
        contentLimiter = RateLimiter(clock: clock, perSecond: options.viewportHz, burst: Self.contentBurst)
    }

    /// The handshake is done: greet.
    public mutating func opened(actions: inout SessionActions<Clock>) {
        hello(actions: &actions)
    }

    // The entry points a server calls are also compiled for its clock: called generically from
    // another module, they looked up generic metadata at run time, 4 % of a loaded server's CPU.

    /// A complete text message from the client.
    /// - Returns: the message's type for the metrics ("invalid" when it could not be read).
    @_specialize(exported:true,where Clock == ContinuousClock)
    public mutating func received(
        _ bytes: [UInt8], at receivedAt: Clock.Instant, actions: inout SessionActions<Clock>
    ) -> String {
        let message: ClientMessage
        do {
            message = try ClientMessage.decode(bytes)
        } catch {
            flush(actions: &actions)
            encoder.error(error)
            actions.send("error", encoder)
            return "invalid"
        }
        return received(message, at: receivedAt, actions: &actions)
    }

    /// A message from the client that the server has already decoded (an ack it read to see whether
    /// it could wait for the session's next turn).
    /// - Returns: the message's type for the metrics.
    @_specialize(exported:true,where Clock == ContinuousClock)
    public mutating func received(
        _ message: ClientMessage, at receivedAt: Clock.Instant, actions: inout SessionActions<Clock>
    ) -> String {
        // Only runs of viewports coalesce: anything else is answered after the viewports before it.
        // A ping's answer says only that the session is alive, and a `children` or `leaves` answer
        // names its cluster and its `req`, so they wait for nothing.
        switch message {
        case .viewport, .ping, .children, .leaves: break
        default: flush(actions: &actions)
        }
        switch message {
        case .viewport(let viewport):
            lastViewportAt = receivedAt
            serve(limiter.offer((viewport, receivedAt)), actions: &actions)
            return "viewport"
        case .ack(let ack):
            if case .heldByWindow(let elapsed, let since) = firstBatch {
                // The ack may have been stamped before this turn parked the batch: then there was no wait.
                let resumed = max(receivedAt, since)
                actions.windowWaits.append(since.duration(to: resumed))
                firstBatch = .running(elapsed: elapsed, since: resumed)
            }
            carryOut(pacer.acknowledge(ack), actions: &actions)
            return "ack"
        case .expand(let id):
            expand(id, actions: &actions)
            return "expand"
        case .held(let message):
            guard served == nil, due == nil else {
                encoder.error(
                    WireError(
                        .invalidField, field: "type", message: "held must come before the session's first viewport"))
                actions.send("error", encoder)
                return "held"
            }
            held.append(contentsOf: message.features)
            heldVersion = message.version
            return "held"
        case .settings(let settings):
            actions.presence = settings.presence
            guard settings.algorithm != nil || settings.filter != nil else { return "settings" }
            let nextAlgorithm = settings.algorithm ?? algorithm
            // The scope stays: a viewer narrows what it sees, never widens it.
            let nextFilter =
                settings.filter.map { EffectiveFilter(scope: filter.scope, requested: $0.expression) } ?? filter
            let next: any Clusterer
            do {
                next = try clusterers(nextAlgorithm, nextFilter)
            } catch {
                // Refused as a whole: the session goes on with the algorithm, filter and view it had.
                encoder.error(error)
                actions.send("error", encoder)
                return "settings"
            }
            algorithm = nextAlgorithm
            filter = nextFilter
            adopt(next)
            // Nothing planned over the index left behind goes out after the hello announcing the new
            // one: a point outside a narrower filter or scope would.
            pacer.dropUnsent()
            // Again, with the points of the filter now (`dataset.points`).
            hello(actions: &actions)
            // Re-serve the current view with the new algorithm or filter, diffed against what the client
            // has, through the limiter like a viewport, so a switch costs no more than panning. A newer
            // viewport held or released already is served with the new index anyway.
            if let served, due == nil, limiter.pending == nil {
                serve(limiter.offer((served, receivedAt)), actions: &actions)
            }
            return "settings"
        case .ping(let id):
            encoder.pong(id: id)
            actions.send("pong", encoder)
            return "ping"
        case .children(let id, let req):
            guard admitContentRequest(req: req, actions: &actions) else { return "children" }
            takeNewerData()
            guard let children = clusterer.children(of: id) else {
                unknownFeature(id, req: req, actions: &actions)
                return "children"
            }
            encoder.children(req: req, id: id, children, context: context)
            actions.send("children", encoder)
            return "children"
        case .leaves(let request):
            guard admitContentRequest(req: request.req, actions: &actions) else { return "leaves" }
            takeNewerData()
            guard
                let page = clusterer.memberPage(
                    of: request.id, zoom: served?.indexZoom ?? 0, after: request.after, limit: request.limit)
            else {
                unknownFeature(request.id, req: request.req, actions: &actions)
                return "leaves"
            }
            encoder.leaves(
                req: request.req, id: request.id, total: page.total, page.points,
                next: page.next.map(LeavesRequest.cursor(after:)), context: context)
            actions.send("leaves", encoder)
            return "leaves"
        }
    }

    /// Requests for a cluster's contents may come in bursts of this many (a click asks for children
    /// and a first page) before the rate applies.
    static var contentBurst: Int { 4 }

    /// Counts a `children` or `leaves` request against its rate; past it, answers `rate-limited`
    /// naming the request's `req`.
    private mutating func admitContentRequest(req: UInt64, actions: inout SessionActions<Clock>) -> Bool {
        guard let from = contentLimiter.admit() else { return true }
        let wait = clock.now.duration(to: from)
        let ms = Int((Double(wait.components.seconds) * 1e3 + Double(wait.components.attoseconds) * 1e-15).rounded(.up))
        encoder.error(
            WireError(
                .rateLimited, field: "type",
                message: "children and leaves are limited to \(options.viewportHz) a second; retry in \(ms) ms",
                retryMs: ms, req: req))
        actions.send("error", encoder)
        return false
    }

    /// Answers an id no feature has; `req` is the request's, for `children` and `leaves`.
    private mutating func unknownFeature(_ id: FeatureID, req: UInt64? = nil, actions: inout SessionActions<Clock>) {
        encoder.error(WireError(.unknownFeature, field: "id", message: "no feature has id \(id)", req: req))
        actions.send("error", encoder)
    }

    /// Trades the memory a turn plans and encodes with (the query's features, the pacer's diff and
    /// orderings, the encoder's buffer) with `other`. A server has one per worker thread, lends it at
    /// the start of each turn and takes it back at the end, so idle sessions hold none; without it the
    /// machine keeps its own.
    @_specialize(exported:true,where Clock == ContinuousClock)
    public mutating func swapScratch(_ other: inout PlanScratch) {
        swap(&features, &other.features)
        swap(&leaving, &other.leaving)
        pacer.swapScratch(&other.pacer)
        swap(&encoder.writer, &other.encoding)
        if binaryEncoder != nil { swap(&binaryEncoder!.writer, &other.binaryEncoding) }
    }

    /// A timer fired: a held-back viewport may be due, or the pacer may send again.
    @_specialize(exported:true,where Clock == ContinuousClock)
    public mutating func tick(actions: inout SessionActions<Clock>) {
        tickDue = nil
        serve(limiter.poll(), heldBack: true, actions: &actions)
        carryOut(pacer.poll(), actions: &actions)
    }

    /// The shared clusterers now hold newer data: the served viewport is computed again at the end of
    /// the turn and only the difference goes out, through the pacer like any batch. Several changes in
    /// one turn cost one refresh; a viewport released meanwhile is served with the new data anyway.
    @_specialize(exported:true,where Clock == ContinuousClock)
    public mutating func dataChanged() {
        // The session's own index is held for it, so it is never refused; were it, the one served stays.
        adopt((try? clusterers(algorithm, filter)) ?? clusterer)
        refreshDue = served != nil
    }

    /// An index of no points, served by a session whose scope's index the server could not give it.
    private static var noPoints: any Clusterer {
        // An empty dataset cannot fail to build.
        try! ClusterIndex(dataset: Dataset(ids: [], coordinates: []), options: ClusterOptions())
    }

    /// Serves views from `newest` from now on; what the client has is no longer a view of it.
    private mutating func adopt(_ newest: any Clusterer) {
        clusterer = newest
        context = FeatureContext(clusterer: newest)
        shownView = nil
    }

    /// Takes up newer data before reading a viewport. A server tells only the sessions whose served
    /// view a change reaches (``dataChanged()``): the view this one moves to may hold changes it was
    /// never told of.
    private mutating func takeNewerData() {
        guard let newest = try? clusterers(algorithm, filter) else { return }
        if newest.dataset.version != clusterer.dataset.version { adopt(newest) }
    }

    /// The end of a turn: clusters and plans the latest viewport released during it, or refreshes the
    /// served one when only the data changed.
    @_specialize(exported:true,where Clock == ContinuousClock)
    public mutating func flush(actions: inout SessionActions<Clock>) {
        if let arrival = due {
            due = nil
            refreshDue = false
            show(arrival.viewport, receivedAt: arrival.receivedAt, actions: &actions)
        } else if refreshDue, let served {
            if let last = lastViewportAt, case let until = last.advanced(by: refreshWaitsForNextViewport),
                clock.now < until
            {
                wake(at: until, actions: &actions)
            } else {
                refreshDue = false
                refresh(served, actions: &actions)
            }
        }
        actions.acknowledgementsCanWait =
            pacer.isDone && limiter.pending == nil && tickDue == nil && !refreshDue && firstBatch == nil
    }

    /// How long after a viewer's latest viewport a refresh waits for the next one. A viewer that is
    /// moving sends views at up to `viewportHz`, each served with the newest data: refreshing the view
    /// it is leaving would cost a query and a batch that the next view supersedes. Once it stops, the
    /// refresh comes this long after its last view.
    private var refreshWaitsForNextViewport: Duration {
        .seconds(1.5 / max(options.viewportHz, 1))
    }

    /// Carries out the rate limiter's decision.
    /// - Parameter heldBack: true when the viewport waited for the limiter's timer; its latency then
    ///   counts from its release, as `viewportHz` (not the server's speed) decided the wait.
    private mutating func serve(
        _ action: RateLimiter<Clock, Arrival>.Action, heldBack: Bool = false, actions: inout SessionActions<Clock>
    ) {
        switch action {
        case .process(let arrival):
            due = (arrival.viewport, heldBack ? clock.now : arrival.receivedAt)
        case .wait(let until):
            wake(at: until, actions: &actions)
        case .idle:
            break
        }
    }

    /// Clusters a viewport (or reads it as a move of the view the client has) and hands it to the
    /// pacer, which drops the unsent rest of the previous one and diffs against what was actually
    /// sent. Past `maxFeatures`, keeps those nearest the centre.
    private mutating func show(
        _ viewport: ViewportMessage, receivedAt: Clock.Instant, actions: inout SessionActions<Clock>
    ) {
        served = viewport
        actions.served = viewport
        takeNewerData()
        actions.servedAsMove = moveShownView(to: viewport)
        if !actions.servedAsMove {
            query(viewport)
            shownView = capped == nil ? (viewport.bbox, viewport.indexZoom) : nil
            if !held.isEmpty {
                pacer.adopt(
                    held: held, current: features, sameData: heldVersion == servedVersion,
                    encoding: binaryEncoder != nil ? .binary : .json)
                held = []
            }
        }
        actions.servedVersion = servedVersion
        firstBatch = .running(elapsed: .zero, since: receivedAt)
        let first =
            actions.servedAsMove
            ? pacer.show(seq: viewport.seq, entering: features, leaving: leaving, viewport: viewport.bbox)
            : pacer.show(seq: viewport.seq, features: features, viewport: viewport.bbox)
        carryOut(first, actions: &actions)
    }

    /// Reads what enters and leaves the view when the viewport moved within the zoom level of the
    /// view the client has exactly, into `features` and `leaving`.
    /// - Returns: false when the viewport needs a whole query: another level, a jump, a plan still
    ///   being sent, newer data than the view was read from, or a view that would pass `maxFeatures`.
    private mutating func moveShownView(to viewport: ViewportMessage) -> Bool {
        guard let shown = shownView, pacer.isDone, held.isEmpty,
            clusterer.viewMoved(
                from: shown.bbox, zoom: shown.zoom, to: viewport.bbox, zoom: viewport.indexZoom,
                entering: &features, leaving: &leaving),
            pacer.client.count - leaving.count + features.count <= options.maxFeatures
        else { return false }
        stampRevisions()
        shownView = (viewport.bbox, viewport.indexZoom)
        servedVersion = clusterer.dataset.version
        capped = nil
        return true
    }

    /// Computes the served viewport again over changed data and sends the difference.
    private mutating func refresh(_ viewport: ViewportMessage, actions: inout SessionActions<Clock>) {
        actions.refreshed = true
        query(viewport)
        actions.servedVersion = servedVersion
        shownView = capped == nil ? (viewport.bbox, viewport.indexZoom) : nil
        carryOut(pacer.refresh(features: features, viewport: viewport.bbox), actions: &actions)
    }

    /// Gives the points in `features` the revision of their row, with which a later difference sees
    /// their properties change. A live index's added points come with theirs.
    private mutating func stampRevisions() {
        let revisions = clusterer.dataset.revisions
        guard !revisions.isEmpty else { return }
        let firstChanged = context.changedRows?.start ?? .max
        for i in features.indices where features[i].isPoint && features[i].row < firstChanged {
            features[i].revision = revisions[Int(features[i].row)]
        }
    }

    /// Fills `features` with the viewport's features, at most `maxFeatures` of them, nearest the centre.
    private mutating func query(_ viewport: ViewportMessage) {
        servedVersion = clusterer.dataset.version
        clusterer.features(in: viewport.bbox, zoom: viewport.indexZoom, into: &features)
        stampRevisions()
        let available = FeatureCap.keepNearest(&features, limit: options.maxFeatures, centre: viewport.bbox.center)
        capped = available > features.count ? (viewport.seq, available) : nil
    }

    /// Sends what the pacer allows now, and asks for a timer when it wants to wait.
    private mutating func carryOut(_ first: Pacer<Clock>.Action, actions: inout SessionActions<Clock>) {
        var action = first
        while case .send(let batch) = action {
            var cap: BatchMessage.Capped?
            if batch.done, let capped, capped.seq == batch.seq {
                cap = BatchMessage.Capped(limit: options.maxFeatures, available: capped.available)
            }
            if binaryEncoder != nil {
                binaryEncoder!.batch(batch, capped: cap, version: servedVersion, context: context)
                actions.send("batch", binaryEncoder!)
            } else {
                encoder.batch(batch, capped: cap, version: servedVersion, context: context)
                actions.send("batch", encoder)
            }
            if case .running(let elapsed, let since) = firstBatch {
                actions.firstBatchLatencies.append(elapsed + since.duration(to: clock.now))
                firstBatch = nil
            }
            action = pacer.poll()
        }
        if case .wait(let until) = action { wake(at: until, actions: &actions) }
        if case .idle = action, pacer.isWindowFull, case .running(let elapsed, let since) = firstBatch {
            let now = clock.now
            firstBatch = .heldByWindow(elapsed: elapsed + since.duration(to: now), since: now)
        }
    }

    private mutating func expand(_ id: FeatureID, actions: inout SessionActions<Clock>) {
        guard var expansion = clusterer.expansion(of: id, zoom: served?.indexZoom ?? 0) else {
            encoder.error(WireError(.unknownFeature, field: "id", message: "no feature has id \(id)"))
            actions.send("error", encoder)
            return
        }
        // The answer's zoom is in the client's own convention.
        if case .zoom(let z) = expansion, let served { expansion = .zoom(z - served.zoomOffset) }
        if binaryEncoder != nil {
            binaryEncoder!.expansion(id: id, expansion, context: context)
            actions.send("expansion", binaryEncoder!)
        } else {
            encoder.expansion(id: id, expansion, context: context)
            actions.send("expansion", encoder)
        }
    }

    /// Asks for a tick at `instant` unless one is already due no later.
    private mutating func wake(at instant: Clock.Instant, actions: inout SessionActions<Clock>) {
        if let due = tickDue, due <= instant { return }
        tickDue = instant
        actions.wakeAt = instant
    }

    private mutating func hello(actions: inout SessionActions<Clock>) {
        var info = dataset
        info.aggregates = clusterer.aggregates
        // Live data: the points now, not those loaded at start-up.
        info.points = clusterer.pointCount
        if !filter.isEverything {
            // A filtered view says nothing of the points it leaves out, not even where they lie.
            info.bounds = clusterer.dataset.bounds
            info.unlocated = 0
            info.skipped = 0
        }
        let limits = HelloMessage.Limits(
            viewportHz: options.viewportHz, pace: options.pace, window: options.window,
            maxMessageBytes: options.maxMessageBytes, maxFeatures: options.maxFeatures)
        encoder.hello(
            HelloMessage(
                session: session, algorithm: algorithm, dataset: info, options: clusterOptions, limits: limits,
                encoding: options.encoding, contents: clusterer.contents))
        actions.send("hello", encoder)
    }

    /// The server's own time on a viewport's first batch. It stops while the client's window holds
    /// the batch: the client's acks, not the server, decide that wait, which is measured apart.
    private enum FirstBatchClock {
        /// Running since `since`, after `elapsed` earlier.
        case running(elapsed: Duration, since: Clock.Instant)
        /// Stopped at `elapsed`; the window has held the batch since `since`.
        case heldByWindow(elapsed: Duration, since: Clock.Instant)
    }
}
