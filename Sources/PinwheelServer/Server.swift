import Foundation
import Logging
import PinwheelCore
import PinwheelTransport
import Synchronization

/// The Pinwheel server: the lws transport, one ``Session`` per WebSocket, the worker threads that
/// cluster and diff, the shared clusterers, and the HTTP routes (`/`, `/vendor/leaflet/`, `/pinwheel/`,
/// `/healthz`, `/metrics`, `/v1/admission`).
///
/// The transport's delegate methods run on the lws service thread and hand events to sessions;
/// clustering and diffing run on ``Workers``, or on the service thread itself while it has time to
/// spare and the data never changes (``ServiceThreadTurns``).
public final class Server: WebSocketServerDelegate, @unchecked Sendable {
    public let configuration: ServerConfiguration
    public let dataset: LoadedDataset
    public let metrics = ServerMetrics()
    /// Sessions' viewports for the sessions that opted in to presence.
    public let presence = PresenceBoard()
    let logger: Logger
    private let current: Mutex<Clusterers>
    /// Index thread only: the data version of the index published last.
    private var publishedVersion: UInt64
    /// Index thread only: whether the machine is short of cores, which makes the workers and
    /// compactions yield.
    private var coreShortage = CoreShortage()
    /// Index thread only: the wait between two refreshes, longer while viewers' first batches are slow.
    private var refreshPacing: RefreshPacing
    /// Index thread only: when to give the allocator's free pages back after a compaction.
    private var allocatorTrim = AllocatorTrim()
    /// Viewports answered since the last refresh, and the slow ones among them.
    let firstBatches: FirstBatchTally
    /// Live indexes sessions stopped serving from since the last refresh (see ``retire(_:)``).
    private let retired = Mutex<[LiveClusterIndex]>([])
    /// When each algorithm was last asked for: while data changes, only those in use are rebuilt.
    private let lastAsked = Mutex<[Algorithm: ContinuousClock.Instant]>([:])
    /// Held while an algorithm is built on first use.
    private let firstBuilds = Mutex(())
    /// The changing points and their log; nil when the data never changes.
    let live: LiveData?
    /// Keeps the index following the live points; nil without live data, or with aggregates (whose
    /// index is rebuilt whole at every refresh).
    private let keeper: IndexKeeper?
    /// The indexes of filtered views, shared by the sessions with the same filter.
    let filters: FilterRegistry
    /// Producers' way in; nil unless a token is configured.
    let ingest: Ingest?
    let workers: Workers
    /// Wakes sessions at the times their machines asked for.
    let alarms = Alarms()
    private var transport: WebSocketServer!
    private let sessions = Mutex<[ConnectionID: Session]>([:])
    /// `pinwheel.ingest.v1` connections.
    private let producers = Mutex<[ConnectionID: IngestConnection]>([:])
    private let stopped = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    /// Set by ``drain()``: `/healthz` answers 503 so a load balancer sends new sessions elsewhere.
    private let draining = Atomic<Bool>(false)
    /// Service thread only: whether it runs turns itself, and the planning memory they use.
    private var serviceTurns = ServiceThreadTurns()
    private var serviceScratch = PlanScratch()

    /// Builds the configured algorithm's clusterer (the others are built when a session first asks for
    /// them) and binds nothing yet.
    /// - Parameters:
    ///   - configuration: options of `pinwheel serve`.
    ///   - dataset: the points to serve.
    ///   - logger: where the server logs.
    public convenience init(configuration: ServerConfiguration, dataset: LoadedDataset, logger: Logger) throws {
        try self.init(
            configuration: configuration, dataset: dataset,
            clusterers: Clusterers(
                dataset: dataset.dataset, options: configuration.clusterOptions, aggregates: configuration.aggregates,
                contents: configuration.contents(of: dataset.dataset), algorithms: [configuration.algorithm]),
            logger: logger)
    }

    /// A server whose data changes: the points are the log's (its newest snapshot and the changes
    /// after it), or `dataset`'s when the log is new.
    /// - Throws: ``ChangeLogError`` when the log cannot be read, or the core's build error.
    public convenience init(
        configuration: ServerConfiguration, dataset: LoadedDataset, log: any ChangeLog, logger: Logger
    ) throws {
        let live = try LiveData(
            log: log, initial: dataset.dataset,
            options: LiveData.Options(
                refreshInterval: configuration.refreshInterval, snapshotEvery: configuration.snapshotEvery),
            logger: logger)
        var loaded = dataset
        loaded.dataset = live.dataset
        try self.init(
            configuration: configuration, dataset: loaded,
            // The hierarchical index is what changes are laid over, whichever algorithm is the default.
            clusterers: Clusterers(
                dataset: loaded.dataset, options: configuration.clusterOptions, aggregates: configuration.aggregates,
                contents: configuration.contents(of: loaded.dataset),
                algorithms: [configuration.algorithm, .hierarchical]),
            live: live, logger: logger)
    }

    /// A server over clusterers already built for `dataset` (several servers may share one set).
    public convenience init(
        configuration: ServerConfiguration, dataset: LoadedDataset, clusterers: Clusterers, logger: Logger
    ) {
        self.init(configuration: configuration, dataset: dataset, clusterers: clusterers, live: nil, logger: logger)
    }

    private init(
        configuration: ServerConfiguration, dataset: LoadedDataset, clusterers: Clusterers, live: LiveData?,
        logger: Logger
    ) {
        self.configuration = configuration
        self.dataset = dataset
        self.logger = logger
        current = Mutex(clusterers)
        publishedVersion = clusterers.clusterer(for: configuration.algorithm).dataset.version
        refreshPacing = RefreshPacing(shortest: configuration.refreshInterval)
        firstBatches = FirstBatchTally(slowerThan: configuration.slowFirstBatch)
        self.live = live
        let points: @Sendable () -> Dataset =
            if let live { { live.dataset } } else { { [dataset] in dataset.dataset } }
        filters = FilterRegistry(
            source: FilterRegistry.Source(
                dataset: points, live: live != nil, options: configuration.clusterOptions,
                aggregates: live == nil ? configuration.aggregates : []),
            budget: configuration.filterMemory)
        if let live, configuration.aggregates.isEmpty,
            let base = clusterers.clusterer(for: .hierarchical) as? ClusterIndex
        {
            keeper = IndexKeeper(
                live: live, base: base,
                options: IndexKeeper.Options(compactionInterval: configuration.compactionInterval), logger: logger)
        } else {
            keeper = nil
        }
        if let live, configuration.ingestToken != nil || !configuration.producerTokens.isEmpty {
            let sharing = configuration.ingestShare.map { [metrics] in
                IngestSharing(share: $0, cost: live.ingestCost, metrics: metrics)
            }
            ingest = Ingest(
                live: live, token: configuration.ingestToken, tenantTokens: configuration.producerTokens,
                tenantColumn: configuration.tenantColumn, rate: configuration.ingestRate, sharing: sharing,
                deadline: configuration.ingestDeadline
            ) { [logger] stall in
                logger.warning(
                    "this process did not run for \(stall) (stopped, or starved of CPU): change requests it held are dropped, not applied"
                )
            }
        } else {
            ingest = nil
        }
        metrics.datasetLoaded(points: dataset.dataset.count, unlocated: dataset.unlocated, skipped: dataset.skipped)
        if live != nil {
            metrics.dataVersionLoaded(dataset.dataset.version)
            metrics.coresShort(false)
            metrics.refreshPaced(every: configuration.refreshInterval)
        }
        workers = Workers(count: configuration.workers, metrics: metrics)
        transport = WebSocketServer(configuration: transportConfiguration())
        ingest?.sharing?.watch { [weak self] in self?.sessions.withLock { !$0.isEmpty } ?? false }
    }

    /// Binds the port and starts the lws service thread.
    public func start() throws {
        live?.start { [weak self] in self?.refreshAndJudgeCores() ?? .zero }
        try transport.start(delegate: self)
        // What loading the data, replaying the log and building the index left free in the
        // allocator's arenas (see ``AllocatorTrim``).
        AllocatorTrim.trim()
        presence.start { [weak self] connection, message in
            _ = self?.send(message, type: "presence", to: connection)
        }
        logger.info(
            "listening on \(transport.listeningAddress) (--host \(configuration.host)), web root \(configuration.webRoot)"
        )
    }

    /// The bound port (the kernel's choice when configured with 0).
    public var port: Int { transport.port }

    /// Which web pages may open a WebSocket here.
    public var originPolicy: OriginPolicy {
        OriginPolicy(allowedOrigins: configuration.allowedOrigins, secure: configuration.tlsCertificate != nil)
    }

    /// The address and port the kernel bound, e.g. "127.0.0.1:8080" or "[::1]:8080".
    public var listeningAddress: String { transport.listeningAddress }

    /// Starts draining: `/healthz` answers 503 `draining` from now on, so a load balancer's health
    /// checks take this node out and send new sessions to the others; the sessions open now keep
    /// being served until ``stop()`` closes them with 1001 and their pages reconnect elsewhere.
    public func drain() {
        draining.store(true, ordering: .releasing)
    }

    /// Closes every session with 1001, stops the transport and the workers; any thread, idempotent.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        presence.stop()
        transport.stop()
        alarms.stop()
        workers.stop()
        live?.stop()
        stopped.signal()
    }

    /// Blocks until ``stop()`` has finished.
    public func wait() {
        stopped.wait()
        stopped.signal()
    }

    /// The transport's counters (connections, messages, queued bytes).
    public var transportStats: TransportStats { transport.stats }

    /// Sessions open now.
    public var sessionCount: Int { sessions.withLock { $0.count } }

    private func transportConfiguration() -> WebSocketServerConfiguration {
        var c = WebSocketServerConfiguration()
        c.host = configuration.host
        c.port = configuration.port
        c.subprotocol = WireEncoding.json.rawValue
        // A client listing `pinwheel.v1+bin` before `pinwheel.v1` gets it (lws takes the first name of
        // the client's list it serves); its messages are the same JSON, so the same limit.
        c.otherSubprotocols = [
            WireEncoding.binary.rawValue: configuration.maxMessageBytes,
            IngestConnection.subprotocol: IngestConnection.maxFrameBytes,
        ]
        c.permessageDeflate = configuration.permessageDeflate
        c.staticMounts = [
            StaticMount(urlPath: "/", directory: configuration.webRoot),
            StaticMount(urlPath: "/vendor/leaflet", directory: configuration.leafletRoot, defaultFile: "leaflet.js"),
        ]
        if FileManager.default.fileExists(atPath: configuration.maplibreRoot) {
            c.staticMounts.append(
                StaticMount(
                    urlPath: "/vendor/maplibre", directory: configuration.maplibreRoot, defaultFile: "maplibre-gl.js"))
        }
        // The client modules, importable by the pages of the origins allowed to connect.
        let modules = URL(fileURLWithPath: configuration.webRoot).appendingPathComponent("pinwheel").path
        if FileManager.default.fileExists(atPath: modules) {
            c.staticMounts.append(
                StaticMount(urlPath: "/pinwheel", directory: modules, defaultFile: "client.js", crossOrigin: true))
        }
        c.routes = [
            "/healthz": { [weak self] _ in
                guard let self, !draining.load(ordering: .acquiring) else {
                    return HTTPResponse(status: 503, text: "draining\n")
                }
                // A node that cannot keep changes (a full disk, or a replicated log that lost its
                // server) is out of a load balancer's rotation; its open sessions go on being served.
                if let problem = live?.log.appendProblem { return HTTPResponse(status: 503, text: "\(problem)\n") }
                return HTTPResponse(text: "ok\n")
            },
            "/metrics": { [weak self] _ in
                guard let self else { return HTTPResponse(status: 503, text: "stopping\n") }
                let stats = transport.stats
                let text =
                    metrics.render(queuedBytes: stats.queuedBytes)
                    + ((live?.log as? ChangeLogHealth)?.metricsText ?? "") + (ingest?.metricsText ?? "")
                    + ConnectionLimitMetrics.text(transport.connectionLimits)
                    + filters.metricsText(full: clusterer(for: configuration.algorithm))
                return HTTPResponse(contentType: "text/plain; version=0.0.4; charset=utf-8", text: text)
            },
        ]
        // Answered once the log has the changes durably; no thread waits for it meanwhile.
        c.deferredRoutes["/v1/changes"] = { [weak self] request, respond in
            guard let self else { return respond(HTTPResponse(status: 503, text: "stopping\n")) }
            answerChanges(request, respond: respond)
        }
        // A producer without the token is refused before its body is read.
        c.routeGuards["/v1/changes"] = { [weak self] request in self?.refuseChanges(request) }
        c.maxRequestBodyBytes = configuration.maxIngestBodyBytes
        c.httpDeadline = configuration.httpDeadline
        c.httpMinimumBodyRate = configuration.httpMinimumBodyRate
        let policy = originPolicy
        let refusals = RefusalLog(logger: logger)
        c.allowedOrigins = .checkedBy { origin, host in
            guard case .refused(let reason) = policy.allows(origin: origin, host: host) else { return nil }
            refusals.note("refused origin: \(reason) (an upgrade gets 403, a module request no CORS header)")
            return reason
        }
        c.routes[Admission.path] = { request in Admission.answer(request, policy: policy) }
        c.maxMessageBytes = configuration.maxMessageBytes
        // SIGTERM must end the process within 2 s: clients that do not answer the Close in a second
        // are dropped.
        c.stopTimeout = .seconds(1)
        c.maxQueuedBytesPerConnection = configuration.maxQueuedBytes
        if let cert = configuration.tlsCertificate, let key = configuration.tlsKey {
            c.tls = TLSFiles(certificatePath: cert, privateKeyPath: key)
        }
        c.eventLoop = configuration.eventLoop
        c.maxConnections = configuration.maxConnections
        // The same numbers as each session's message flood rule, over every frame, pings included;
        // a producer's messages are governed by the ingest rate instead.
        var frames = FramePolicy(idleTimeout: configuration.idleTimeout)
        frames.messagesExempt = [IngestConnection.subprotocol]
        c.framePolicy = frames
        return c
    }

    // MARK: Transport delegate (lws service thread only)

    public func webSocketServer(_ server: WebSocketServer, didOpen connection: ConnectionInfo) {
        if connection.subprotocol == IngestConnection.subprotocol {
            return openProducer(connection, server)
        }
        let session = Session(
            connection: connection.id, host: self, encoding: WireEncoding(rawValue: connection.subprotocol) ?? .json)
        let admitted = sessions.withLock { table -> Bool in
            guard table.count < configuration.maxSessions else { return false }
            table[connection.id] = session
            return true
        }
        guard admitted else {
            server.close(connection.id, code: .tryAgainLater, reason: "too many sessions")
            return
        }
        metrics.sessionOpened()
        session.post(.opened)
    }

    public func webSocketServer(_ server: WebSocketServer, didReceive text: [UInt8], from connection: ConnectionID) {
        if let producer = producers.withLock({ $0[connection] }) {
            let accepted = producer.receive(text) { [weak self] answer in
                _ = self?.send(answer, type: "ack", to: connection)
            }
            if !accepted {
                let limit = IngestConnection.maxPendingFrames
                server.close(connection, code: .policyViolation, reason: "more than \(limit) frames unanswered")
            }
            return
        }
        guard let session = sessions.withLock({ $0[connection] }) else { return }
        if case .close(let code, let reason) = session.recordMessage() {
            server.close(connection, code: CloseCode(rawValue: code), reason: reason)
            return
        }
        session.received(text, at: .now)
    }

    public func webSocketServer(
        _ server: WebSocketServer, didClose connection: ConnectionID, code: CloseCode, reason: String
    ) {
        if producers.withLock({ $0.removeValue(forKey: connection) }) != nil {
            metrics.closed(code: Int(code.rawValue))
            return
        }
        guard let session = sessions.withLock({ $0.removeValue(forKey: connection) }) else {
            metrics.closed(code: Int(code.rawValue))
            return
        }
        metrics.sessionClosed(code: Int(code.rawValue))
        session.post(.closed)
    }

    /// The clusterers sessions share now.
    public var clusterers: Clusterers { current.withLock { $0 } }

    /// Takes a live index a session stopped serving from, for the index thread to let go of at its
    /// next refresh. The session may hold its last reference, and freeing a live index frees every
    /// node its changes copied, milliseconds of CPU that would delay that session's viewer and the
    /// others waiting for the same worker.
    func retire(_ index: LiveClusterIndex) {
        retired.withLock { $0.append(index) }
    }

    /// Index thread: a refresh, then whether the workers and compactions should yield (``CoreShortage``).
    /// - Returns: the least time until the next refresh (``RefreshPacing``).
    private func refreshAndJudgeCores() -> Duration {
        refreshIndex()
        let (answered, slow) = firstBatches.take()
        let before = refreshPacing.interval
        refreshPacing.observe(answered: answered, slow: slow)
        if refreshPacing.interval != before { metrics.refreshPaced(every: refreshPacing.interval) }
        judgeCores()
        if allocatorTrim.isDue(at: .now) {
            let started = ContinuousClock.now
            AllocatorTrim.trim()
            logger.debug("free memory handed back to the kernel in \(ContinuousClock.now - started)")
        }
        return refreshPacing.interval
    }

    /// Index thread: whether the workers and compactions should yield (``CoreShortage``).
    private func judgeCores() {
        let now = ContinuousClock.now
        guard coreShortage.isDue(at: now),
            let reading = CoreShortage.Reading.now(alsoIdle: keeper?.cpuOnIdleCores ?? .zero),
            let short = coreShortage.read(reading, at: now)
        else { return }
        workers.setYielding(short)
        keeper?.coresJudged(short: short)
        metrics.coresShort(short)
        let idle = "\(Int((coreShortage.idleShare * 100).rounded())) % idle over \(CoreShortage.window)"
        logger.info(
            short
                ? "the machine is short of cores (\(idle)): the workers and compactions yield to the index thread"
                : "the machine has cores to spare (\(idle)): the workers run at the process's priority, compactions on idle cores"
        )
    }

    /// Index thread: brings the index up to the data, swaps it in and tells every session, which
    /// refreshes its view.
    private func refreshIndex() {
        // Taken out under the lock and let go of outside it: the last reference frees the index here.
        var letGo = retired.withLock { taken in
            defer { taken = [] }
            return taken
        }
        letGo.removeAll()
        let now = ContinuousClock.now
        let inUse = lastAsked.withLock { asked in
            Set(asked.filter { now - $0.value < .seconds(60) }.keys).union([configuration.algorithm])
        }
        var footprint: ChangeFootprint?
        let previous = publishedVersion
        if let keeper {
            guard
                let published = keeper.refresh(
                    inUse: inUse,
                    compactionPriority: .starting(coresShort: coreShortage.isShort, judged: coreShortage.hasJudged))
            else { return }
            current.withLock { $0 = $0.replacing(published.clusterers) }
            // Before the sessions hear of it: a filtered session takes up its index's new state.
            let points = live?.publication()
            filters.refresh(
                changes: published.changes, version: published.version, names: points?.names ?? [:],
                columns: points?.columns ?? [])
            metrics.indexServes(
                version: published.version, points: published.points, delta: published.delta,
                took: now.duration(to: .now),
                rebuilt: published.compaction)
            footprint = published.footprint
            publishedVersion = published.version
            if published.compaction != nil { allocatorTrim.compacted(at: now) }
        } else if let live {
            let (data, changes) = live.datasetTakingChanges()
            filters.refresh(
                changes: changes, version: data.version, names: data.names, columns: data.properties.columns)
            guard data.version != clusterers.clusterer(for: configuration.algorithm).dataset.version else { return }
            do {
                let next = try clusterers.rebuilt(over: data, algorithms: inUse)
                current.withLock { $0 = next }
                publishedVersion = data.version
            } catch {
                logger.error("rebuilding the index at version \(data.version) failed: \(error)")
                return
            }
            let took = now.duration(to: .now)
            metrics.indexServes(version: data.version, points: data.count, delta: 0, took: took, rebuilt: took)
            allocatorTrim.compacted(at: now)
        }
        let options = configuration.clusterOptions
        for session in sessions.withLock({ Array($0.values) })
        where session.needsTelling(of: footprint, previous: previous, now: publishedVersion, options: options) {
            session.post(.dataChanged)
        }
    }

    /// A producer's socket: kept when the server takes changes and the token is right, else closed
    /// with 1008 and the reason. Lws service thread.
    private func openProducer(_ connection: ConnectionInfo, _ server: WebSocketServer) {
        guard let ingest else {
            return server.close(connection.id, code: .policyViolation, reason: "this server takes no changes")
        }
        guard let grant = ingest.grant(for: connection.authorization) else {
            return server.close(
                connection.id, code: .policyViolation, reason: "a valid token is needed: Authorization: Bearer <token>")
        }
        producers.withLock {
            $0[connection.id] = IngestConnection(
                id: connection.id, ingest: ingest, peer: connection.peerAddress, tenant: grant.tenant)
        }
    }

    // MARK: For sessions (any thread)

    /// The shared clusterer of an algorithm now; the first session asking for one not built yet
    /// waits while it is built.
    func clusterer(for algorithm: Algorithm) -> any Clusterer {
        if live != nil { lastAsked.withLock { $0[algorithm] = .now } }
        if let built = clusterers.built(algorithm) { return built }
        return builtOnFirstUse(algorithm)
    }

    /// Builds an algorithm's clusterer over the points now, once, however many sessions ask at the
    /// same time; with live data the compactions keep it up to the changes from then on.
    private func builtOnFirstUse(_ algorithm: Algorithm) -> any Clusterer {
        firstBuilds.withLock { _ in
            let now = clusterers
            if let built = now.built(algorithm) { return built }
            let started = ContinuousClock.now
            let fallback = now.clusterer(for: configuration.algorithm)
            do {
                let points = live?.dataset ?? fallback.dataset
                let built = try now.build(algorithm, over: points)
                current.withLock { $0 = $0.replacing([algorithm: built]) }
                logger.info(
                    "\(algorithm.rawValue) built on first use: \(points.count) points in \(ContinuousClock.now - started)"
                )
                return built
            } catch {
                logger.error(
                    "building \(algorithm.rawValue) failed: \(error); serving \(configuration.algorithm.rawValue)")
                return fallback
            }
        }
    }

    /// The clusterer of an algorithm over the points `filter` lets through, built now (on the caller's
    /// thread, a worker) when no session had it. A build that fails serves no points, never all of them.
    func clusterer(for algorithm: Algorithm, filter: EffectiveFilter) -> any Clusterer {
        guard !filter.isEverything else { return clusterer(for: algorithm) }
        do {
            return try filters.clusterer(for: algorithm, filter: filter)
        } catch {
            logger.error("building the index of filter \(filter.key) failed: \(error)")
            return Self.noPoints(configuration.clusterOptions)
        }
    }

    private static func noPoints(_ options: ClusterOptions) -> any Clusterer {
        // An empty dataset cannot fail to build.
        try! ClusterIndex(dataset: Dataset(ids: [], coordinates: []), options: options)
    }

    /// Hands a message to the transport; false when the connection is gone or was closed for
    /// not reading (the transport closes it with 1008 then).
    func send(_ text: [UInt8], type: String, to connection: ConnectionID) -> Bool {
        counted(transport.send(text, to: connection), type: type, bytes: text.count)
    }

    /// Hands over a message encoded behind the transport's headroom (see ``SessionOptions/headroom``),
    /// without copying it; `binary` sends it as a binary frame.
    func send(framed: [UInt8], binary: Bool, type: String, to connection: ConnectionID) -> Bool {
        counted(
            transport.send(framed: framed, binary: binary, to: connection), type: type,
            bytes: framed.count - WebSocketServer.headroom)
    }

    private func counted(_ result: SendResult, type: String, bytes: Int) -> Bool {
        switch result {
        case .queued:
            metrics.sent(type: type, bytes: bytes)
            return true
        case .overCapacity, .notConnected:
            return false
        }
    }

    /// Closes one connection with a code and a reason.
    func close(_ connection: ConnectionID, code: CloseCode, reason: String) {
        transport.close(connection, code: code, reason: reason)
    }

    /// Posts a `tick` to a session at `deadline`.
    func wake(_ session: Session, at deadline: ContinuousClock.Instant) {
        alarms.wake(session, at: deadline)
    }

    /// Drops a closed session's pending ticks, which would hold it until they rang.
    func cancelWakes(of session: Session) {
        alarms.cancel(session)
    }

    /// Queues a session for the workers.
    func schedule(_ session: Session, priority: Workers.Priority) {
        workers.submit(session, priority: priority)
    }

    /// Whether the service thread runs a session's turn itself now (``ServiceThreadTurns``);
    /// never with live data. Service thread only.
    /// - Parameter lastTurn: how long the session's previous turn took.
    func runsOnServiceThread(lastTurn: Duration) -> Bool {
        live == nil && serviceTurns.runsHere(workersWaiting: workers.waiting, lastTurn: lastTurn)
    }

    /// Runs a session's turn on the service thread, with that thread's planning memory. Service
    /// thread only.
    func runOnServiceThread(_ session: Session) {
        session.turn(scratch: &serviceScratch, onServiceThread: true)
    }
}
