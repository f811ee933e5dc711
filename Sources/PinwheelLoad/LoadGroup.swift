import Foundation
import HeapModule
import PinwheelCore
import PinwheelTransport
import Synchronization

/// A share of the load clients on one lws client context: its service thread receives and
/// acknowledges, its ticker thread connects the clients on schedule and sends their viewports.
final class LoadGroup: WebSocketClientDelegate, @unchecked Sendable {
    struct State {
        var clients: [LoadClient]
        var byConnection: [ConnectionID: Int] = [:]
        /// Set when the tour ends: no more viewports.
        var touring = true
        /// Set when the run closes the connections: closes after this are ours.
        var closing = false
        /// The next client to connect: clients are in `connectAt` order.
        var nextToConnect = 0
        /// Touring clients by the time of their next tick, so the ticker visits only those due.
        var ticks = Heap<Tick>()
    }

    /// A client's next tick.
    struct Tick: Comparable {
        var at: ContinuousClock.Instant
        var client: Int

        static func < (a: Tick, b: Tick) -> Bool { a.at < b.at }
    }

    let state: Mutex<State>
    private let client: WebSocketClient
    private let options: LoadOptions
    private let origin: String?
    private let period: Duration?
    private let keepsSamples: Bool
    private let stopTicker = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let tickerDone = DispatchSemaphore(value: 0)
    // Lws service thread only.
    private var scanner = MessageScanner()
    /// Each open connection's binary decoder, whose running state spans its frames.
    private var decoders: [ConnectionID: BinaryDecoder] = [:]
    private var ackWriter = JSONWriter(capacity: 64)
    private var settingsWriter = JSONWriter(capacity: 256)

    /// - Parameters:
    ///   - indices: the global indices of this group's clients.
    ///   - start: when the ramp starts.
    ///   - keepsSamples: keep every latency sample for the report (false for bots that run for hours).
    ///   - still: views of still viewers, one per index, each sent once and never moved from: the
    ///     clients all connect at `start`.
    ///   - filters: filtered mode: client k views through filter k mod their count.
    ///   - probe: with `still`, the clients are probes setting `options.probes` never-seen filters,
    ///     one every `probe` over the tour.
    init(
        indices: [Int], options: LoadOptions, origin: String?, start: ContinuousClock.Instant,
        keepsSamples: Bool = true, still: [TourViewport]? = nil, filters: LoadFilters? = nil, probe: Duration? = nil
    ) {
        self.options = options
        self.keepsSamples = keepsSamples
        self.origin = origin
        period = options.viewportHz > 0 ? .nanoseconds(Int64(1e9 / options.tickHz)) : nil
        let step = options.clients > 1 && still == nil ? options.ramp / Double(options.clients - 1) : .zero
        var clients = indices.map { LoadClient(index: $0, connectAt: start + step * Double($0)) }
        for k in clients.indices {
            clients[k].still = still?[k]
            if let filters, !filters.filters.isEmpty {
                clients[k].filter = filters.filters[clients[k].index % filters.filters.count]
            }
            if let probe { clients[k].probe = LoadClient.Probe(total: options.probes, period: probe) }
        }
        state = Mutex(State(clients: clients))
        var configuration = WebSocketClientConfiguration()
        configuration.eventLoop = options.eventLoop
        configuration.permessageDeflate = options.deflate
        configuration.allowSelfSignedCertificates = true
        client = WebSocketClient(configuration: configuration)
    }

    /// Starts the service thread and the ticker thread. The runner's thread.
    func start() throws {
        try client.start(delegate: self)
        let thread = Thread { [self] in
            tickLoop()
            tickerDone.signal()
        }
        thread.name = "pinwheel-load-ticker"
        thread.start()
    }

    /// Stops sending viewports; the connections stay open for the last answers. Any thread.
    func endTour() {
        state.withLock { $0.touring = false }
    }

    /// Bytes the group's sockets received over the wire, once ``stop()`` closed them. Any thread.
    var wireBytes: Int { client.stats.wireBytesReceived }

    /// Viewports still waiting for their `done`. Any thread.
    var inFlight: Int {
        state.withLock { s in s.clients.reduce(0) { $0 + ($1.phase == .touring ? $1.inFlight.count : 0) } }
    }

    /// Closes every connection with 1000 and joins the threads. Any thread but the group's own; once
    /// (later calls return at once).
    func stop() {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        stopTicker.store(true, ordering: .relaxed)
        tickerDone.wait()
        state.withLock { s in
            s.closing = true
            // Clients that never got going are errors of the run, not silent absentees.
            for k in s.clients.indices {
                switch s.clients[k].phase {
                case .waiting: s.clients[k].figures.count(error: "never connected: the ramp did not reach it")
                case .connecting: s.clients[k].figures.count(error: "handshake unfinished at the end")
                case .open: s.clients[k].figures.count(error: "no hello by the end")
                case .touring, .finished: break
                }
            }
        }
        client.stop()
        state.withLock { s in
            for k in s.clients.indices {
                s.clients[k].figures.unanswered = s.clients[k].inFlight.count
            }
        }
    }

    // MARK: Ticker thread

    private func tickLoop() {
        var writer = JSONWriter(capacity: 256)
        var outgoing: [(ConnectionID, [UInt8])] = []
        while !stopTicker.load(ordering: .relaxed) {
            let now = ContinuousClock.now
            state.withLock { s in
                // Only the clients due are visited: a scan of all 10,000 every 2 ms held the lock the
                // service thread needs for every message, and was a tenth of the tool's CPU.
                while s.nextToConnect < s.clients.count && s.clients[s.nextToConnect].connectAt <= now {
                    let k = s.nextToConnect
                    s.nextToConnect += 1
                    if s.clients[k].phase == .waiting { connect(&s, k) }
                }
                guard s.touring else { return }
                while let first = s.ticks.min, first.at <= now {
                    s.ticks.removeMin()
                    // A client that left is not rescheduled.
                    guard s.clients[first.client].phase == .touring else { continue }
                    if let message = tick(&s.clients[first.client], now: now, writer: &writer) {
                        outgoing.append(message)
                    }
                    // The tick moved the client's next one on; one that could not tick is not rescheduled.
                    let next = s.clients[first.client].nextTick
                    if next > first.at { s.ticks.insert(Tick(at: next, client: first.client)) }
                }
            }
            for (connection, bytes) in outgoing {
                client.send(bytes, to: connection)
            }
            outgoing.removeAll(keepingCapacity: true)
            Thread.sleep(forTimeInterval: 0.002)
        }
    }

    // Under the lock; `connect` only queues, so the service thread cannot report the open before
    // the id is recorded here.
    private func connect(_ s: inout State, _ k: Int) {
        do {
            let id = try client.connect(to: options.url, subprotocol: options.encoding.rawValue, origin: origin)
            s.clients[k].connection = id
            s.clients[k].phase = .connecting
            s.byConnection[id] = k
        } catch {
            s.clients[k].phase = .finished
            s.clients[k].figures.count(error: "connect: \(error)")
        }
    }

    private func tick(
        _ c: inout LoadClient, now: ContinuousClock.Instant, writer: inout JSONWriter
    ) -> (ConnectionID, [UInt8])? {
        guard let period, let connection = c.connection else { return nil }
        let scheduled = c.nextTick
        c.nextTick = c.nextTick + period
        // A ticker that fell behind skips ticks rather than bursting to catch up.
        if c.nextTick < now { c.nextTick = now + period }
        if c.probe != nil, c.nextSeq > 1 {
            // The probe's view is sent; once it is served, the probes.
            guard c.answeredSeq > 0 else {
                c.nextTick = now + .milliseconds(20)
                return nil
            }
            return probeTick(&c, connection: connection, now: now, writer: &writer)
        }
        let viewport: TourViewport?
        if let still = c.still {
            // A still viewer sends its view once and is not rescheduled; a probe then probes.
            viewport = c.nextSeq == 1 ? still : nil
            if c.probe == nil { c.nextTick = scheduled }
        } else {
            viewport = c.tour?.next()
        }
        guard let viewport else { return nil }
        viewport.message(seq: c.nextSeq).encode(into: &writer)
        c.inFlight.append(LoadClient.InFlight(seq: c.nextSeq, sentAt: now))
        c.nextSeq += 1
        c.figures.viewportsSent += 1
        return (connection, writer.bytes)
    }

    /// A probe's tick once its view is served: the next never-seen filter when the last one was
    /// answered and its time has come.
    private func probeTick(
        _ c: inout LoadClient, connection: ConnectionID, now: ContinuousClock.Instant, writer: inout JSONWriter
    ) -> (ConnectionID, [UInt8])? {
        guard var probe = c.probe, probe.sent < probe.total else { return nil }
        guard probe.waiting == nil else {
            // Looked at again soon: the answer is on its way.
            c.nextTick = now + .milliseconds(20)
            return nil
        }
        let filter = LoadFilters.probe(probe.sent)
        probe.sent += 1
        probe.waiting = (now, false)
        c.probe = probe
        c.filter = filter
        c.figures.filterKey = filter.expression.key
        c.nextTick = now + probe.period
        return (connection, Self.settings(filter, writer: &writer))
    }

    /// `{"type":"settings","filter":…}`.
    static func settings(_ filter: LoadFilters.Filter, writer: inout JSONWriter) -> [UInt8] {
        writer.reset()
        writer.raw(#"{"type":"settings","filter":"#)
        filter.expression.write(into: &writer)
        writer.byte(UInt8(ascii: "}"))
        return writer.bytes
    }

    /// Counts the points of a batch that fall outside the client's filter. Points keep their dataset
    /// ids, below 2^32; a cluster (a larger id) may count 1 when changes took its other points away.
    private static func check(_ batch: BatchMessage, against filter: LoadFilters.Filter, _ f: inout ClientFigures) {
        for feature in [batch.add, batch.update].joined() where feature.id <= UInt64(UInt32.max) {
            f.pointsChecked += 1
            guard !filter.bound.matches(NamedProperties(feature.properties)) else { continue }
            f.scopeViolations += 1
            if f.firstViolation == nil {
                let properties = feature.properties.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                f.firstViolation =
                    "point \(feature.id) {\(properties.joined(separator: ", "))} in batch \(batch.batch) (data version \(batch.version)) under \(filter.expression.key)"
            }
        }
    }

    // MARK: Delegate, lws service thread only

    func webSocketClient(
        _ client: WebSocketClient, didOpen connection: ConnectionID, subprotocol: String?, connectTime: Duration
    ) {
        state.withLock { s in
            guard let k = s.byConnection[connection] else { return }
            s.clients[k].phase = .open
            s.clients[k].figures.connectMicros = LoadClient.micros(connectTime)
            if subprotocol != options.encoding.rawValue {
                s.clients[k].figures.count(error: "subprotocol \(subprotocol ?? "none")")
            }
        }
        if options.presence {
            client.send(ClientMessage.settings(SettingsMessage(presence: true)).json, to: connection)
        }
    }

    func webSocketClient(
        _ client: WebSocketClient, didReceive text: [UInt8], binary: Bool, from connection: ConnectionID
    ) {
        let now = ContinuousClock.now
        let scanned = text.withUnsafeBufferPointer { bytes in
            binary
                ? scanner.scan(binary: bytes, decoder: &decoders[connection, default: BinaryDecoder()])
                : scanner.scan(bytes)
        }
        var ack: Int?
        var hello: (bounds: BBox, session: String, points: Int)?
        var settings: [UInt8]?
        var received: BatchMessage?
        var presence: [String]?
        if scanned && scanner.kind == .hello {
            hello = Self.readHello(text)
        } else if scanned && scanner.kind == .presence {
            presence = Self.readPresence(text)
        }
        if scanned && scanner.kind == .batch && (options.filters > 0 || options.probes > 0) {
            // Every point is checked against the filter: the batch read whole.
            if binary {
                received = scanner.batchMessage
            } else if case .batch(let b)? = try? ServerMessage.decode(text) {
                received = b
            }
        }
        state.withLock { s in
            guard let k = s.byConnection[connection] else { return }
            guard scanned else {
                s.clients[k].figures.count(error: "unreadable message")
                return
            }
            switch scanner.kind {
            case .batch:
                ack = s.clients[k].apply(scanner, bytes: text.count, at: now, keepsSamples: keepsSamples)
                // A probe's batches between its `settings` and the `hello` answering it are the old filter's.
                let inUse = s.clients[k].probe.map { $0.waiting == nil || $0.waiting!.helloSeen } ?? true
                if let filter = s.clients[k].filter, s.clients[k].filterStage == .set || s.clients[k].probe != nil,
                    inUse
                {
                    if let received {
                        Self.check(received, against: filter, &s.clients[k].figures)
                    } else {
                        s.clients[k].figures.count(error: "batch not read whole")
                    }
                }
                if let waiting = s.clients[k].probe?.waiting, waiting.helloSeen {
                    s.clients[k].figures.probeMicros.append(LoadClient.micros(now - waiting.since))
                    s.clients[k].probe?.waiting = nil
                }
                if s.clients[k].tour == nil { s.clients[k].figures.count(error: "batch before hello") }
            case .hello:
                guard let hello else {
                    s.clients[k].figures.count(error: "hello without dataset bounds")
                    return
                }
                s.clients[k].session = hello.session
                if s.clients[k].probe?.waiting != nil {
                    // The probe's filter is in use: its view follows.
                    s.clients[k].probe?.waiting?.helloSeen = true
                    s.clients[k].figures.filteredPoints = hello.points
                    return
                }
                if let filter = s.clients[k].filter, s.clients[k].probe == nil {
                    switch s.clients[k].filterStage {
                    case .none:
                        // The filter first; the tour starts over the points it lets through.
                        s.clients[k].filterStage = .asked
                        s.clients[k].figures.filterKey = filter.expression.key
                        settings = Self.settings(filter, writer: &settingsWriter)
                        return
                    case .asked:
                        s.clients[k].filterStage = .set
                        s.clients[k].figures.filteredPoints = hello.points
                    case .set:
                        break
                    }
                }
                if s.clients[k].tour == nil {
                    startTour(&s.clients[k], bounds: hello.bounds, now: now)
                    if period != nil { s.ticks.insert(Tick(at: s.clients[k].nextTick, client: k)) }
                }
            case .presence:
                s.clients[k].figures.presenceMessages += 1
                s.clients[k].figures.presenceSessions = presence ?? []
            case .error:
                s.clients[k].figures.count(error: "server error \(scanner.errorCode)")
            case .other:
                break
            }
        }
        if let settings { client.send(settings, to: connection) }
        if let ack {
            // What a quick page spends: a fixed cost plus a little per marker.
            let ms = ((0.2 + 0.01 * Double(ack)) * 100).rounded() / 100
            ClientMessage.ack(AckMessage(batch: UInt64(scanner.batch), applied: ack, ms: ms)).encode(into: &ackWriter)
            client.send(ackWriter.bytes, to: connection)
        }
    }

    func webSocketClient(_ client: WebSocketClient, didClose connection: ConnectionID, code: CloseCode, reason: String)
    {
        decoders[connection] = nil
        state.withLock { s in
            guard let k = s.byConnection[connection] else { return }
            s.clients[k].phase = .finished
            s.clients[k].figures.closeCode = code.rawValue
            if !s.closing {
                s.clients[k].figures.closedDuringRun = true
                s.clients[k].figures.count(error: "closed \(code.rawValue)")
            }
        }
    }

    func webSocketClient(_ client: WebSocketClient, didFailToConnect connection: ConnectionID, error: String) {
        state.withLock { s in
            guard let k = s.byConnection[connection] else { return }
            s.clients[k].phase = .finished
            s.clients[k].figures.count(error: "connect failed")
        }
    }

    private func startTour(_ c: inout LoadClient, bounds: BBox, now: ContinuousClock.Instant) {
        // Each client gets its own stream from the run's seed; golden-ratio phases spread the ticks.
        var mix = SplitMix64(seed: options.seed ^ (UInt64(c.index) &* 0x9E37_79B9_7F4A_7C15))
        c.tour = Tour(
            trace: options.trace, seed: mix.next(), bounds: bounds, width: options.width, height: options.height,
            sendShare: options.sendShare)
        c.phase = .touring
        if let period {
            let phase = (Double(c.index) * 0.618_033_988_75).truncatingRemainder(dividingBy: 1)
            c.nextTick = now + period * phase
        }
    }

    /// The session id and dataset bounds of a `hello`; nil for an empty dataset or a message that is
    /// not a valid `hello`.
    static func readHello(_ text: [UInt8]) -> (bounds: BBox, session: String, points: Int)? {
        guard case .hello(let hello) = try? ServerMessage.decode(text), let bounds = hello.dataset.bounds else {
            return nil
        }
        return (bounds, hello.session, hello.dataset.points)
    }

    /// The session ids a `presence` message shows.
    static func readPresence(_ text: [UInt8]) -> [String]? {
        guard case .presence(let viewports) = try? ServerMessage.decode(text) else { return nil }
        return viewports.map(\.session)
    }
}

/// A point feature's properties as a bound filter reads them, by ``LoadFilters/columns``.
struct NamedProperties: FilterRow {
    let properties: [String: PropertyValue]

    init(_ properties: [String: PropertyValue]) { self.properties = properties }

    func value(column: Int) -> PropertyValue? {
        column >= 0 && column < LoadFilters.columns.count ? properties[LoadFilters.columns[column]] : nil
    }
}
