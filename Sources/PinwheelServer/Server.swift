import Foundation
import Logging
import PinwheelCore
import PinwheelTransport
import Synchronization

/// The Pinwheel server, a composition of parts with one job each (docs/architecture.md#threads):
/// the lws transport with the static mounts (`/`, `/vendor/leaflet/`, `/pinwheel/`), the
/// ``SessionHub`` (its delegate, on the service thread: one ``Session`` per WebSocket), the
/// ``Workers`` that cluster and diff, the ``Alarms``, the ``ServedClusterers`` sessions share, the
/// ``IndexPublisher`` (the index thread, with live data) and the ``HTTPRoutes``. It is every session's
/// ``SessionHost`` (SessionHost.swift), and starts and stops the parts.
public final class Server: @unchecked Sendable {
    public let configuration: ServerConfiguration
    public let dataset: LoadedDataset
    public let metrics = ServerMetrics()
    /// Sessions' viewports for the sessions that opted in to presence.
    public let presence = PresenceBoard()
    let logger: Logger
    /// The clusterers sessions share.
    let served: ServedClusterers
    /// The changing points and their log; nil when the data never changes.
    let live: LiveData?
    /// The index thread, which keeps the index following the live points; nil without live data.
    let publisher: IndexPublisher?
    /// The indexes of filtered views, shared by the sessions with the same filter.
    let filters: FilterRegistry
    /// Producers' way in; nil unless a token is configured.
    let ingest: Ingest?
    let workers: Workers
    /// Wakes sessions at the times their machines asked for.
    let alarms = Alarms()
    /// The sessions and producers' sockets by connection: the transport's delegate.
    private(set) var hub: SessionHub!
    let routes: HTTPRoutes
    private(set) var transport: WebSocketServer!
    private let stopped = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)

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
            options: LiveData.Options(snapshotEvery: configuration.snapshotEvery),
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
        let livePoints: (@Sendable () -> Dataset)? = if let live { { live.dataset } } else { nil }
        served = ServedClusterers(clusterers, algorithm: configuration.algorithm, points: livePoints, logger: logger)
        self.live = live
        let passing: @Sendable (FilterExpression) -> Dataset =
            if let live { { live.points(passing: $0) } } else { { [dataset] in dataset.dataset.filtered(by: $0) } }
        filters = FilterRegistry(
            source: FilterRegistry.Source(
                points: passing,
                full: { [served] in served.now.built($0) ?? served.now.clusterer(for: served.algorithm) },
                live: live != nil,
                options: configuration.clusterOptions,
                aggregates: live == nil ? configuration.aggregates : []),
            budget: configuration.filterMemory)
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
        let workers = Workers(count: configuration.workers, metrics: metrics)
        self.workers = workers
        publisher = live.map { [served, filters, metrics, logger] live in
            IndexPublisher(
                live: live, served: served, filters: filters, workers: workers,
                options: IndexPublisher.Options(
                    refreshInterval: configuration.refreshInterval, slowFirstBatch: configuration.slowFirstBatch,
                    rebuildsWhole: !configuration.aggregates.isEmpty,
                    compaction: IndexKeeper.Options(compactionInterval: configuration.compactionInterval)),
                metrics: metrics, logger: logger)
        }
        routes = HTTPRoutes(
            metrics: metrics, logger: logger, ingest: ingest, live: live, filters: filters, served: served,
            policy: OriginPolicy(
                allowedOrigins: configuration.allowedOrigins, secure: configuration.tlsCertificate != nil))
        hub = SessionHub(
            host: self, maxSessions: configuration.maxSessions, clusterOptions: configuration.clusterOptions,
            ingest: ingest, metrics: metrics, workers: workers, live: live != nil)
        transport = WebSocketServer(configuration: transportConfiguration())
        routes.transport = transport
        ingest?.sharing?.watch { [weak hub] in (hub?.count ?? 0) > 0 }
    }

    /// Binds the port and starts the lws service thread.
    public func start() throws {
        publisher?.start(telling: hub)
        try transport.start(delegate: hub)
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
    public var originPolicy: OriginPolicy { routes.policy }

    /// The address and port the kernel bound, e.g. "127.0.0.1:8080" or "[::1]:8080".
    public var listeningAddress: String { transport.listeningAddress }

    /// Starts draining: `/healthz` answers 503 `draining` from now on, so a load balancer's health
    /// checks take this node out and send new sessions to the others; the sessions open now keep
    /// being served until ``stop()`` closes them with 1001 and their pages reconnect elsewhere.
    public func drain() {
        routes.drain()
    }

    /// Closes every session with 1001, stops the transport and the workers; any thread, idempotent.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        presence.stop()
        transport.stop()
        alarms.stop()
        workers.stop()
        publisher?.stop()
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
    public var sessionCount: Int { hub.count }

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
        routes.install(into: &c)
        c.maxRequestBodyBytes = configuration.maxIngestBodyBytes
        c.httpDeadline = configuration.httpDeadline
        c.httpMinimumBodyRate = configuration.httpMinimumBodyRate
        let policy = routes.policy
        let refusals = RefusalLog(logger: logger)
        c.allowedOrigins = .checkedBy { origin, host in
            guard case .refused(let reason) = policy.allows(origin: origin, host: host) else { return nil }
            refusals.note("refused origin: \(reason) (an upgrade gets 403, a module request no CORS header)")
            return reason
        }
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

    /// The clusterers sessions share now.
    public var clusterers: Clusterers { served.now }
}
