import Logging
import PinwheelCore
import PinwheelTransport

/// What a ``Session`` needs from the server that holds it, and nothing more: how it starts, the shared
/// clusterers, the wire, the threads that run its turns, its timers, and where it reports. ``Server``
/// is the host of every real session; tests drive a session with a host of their own, in memory.
/// Any thread, unless a member says otherwise.
protocol SessionHost: AnyObject, Sendable {
    /// How a new session whose client chose `encoding` starts.
    func sessionStart(encoding: WireEncoding) -> SessionStart
    /// The shared clusterer of an algorithm now, over the points `filter` lets through.
    /// - Throws: a new filtered index that would take those in use past `--filter-memory`.
    func clusterer(for algorithm: Algorithm, filter: EffectiveFilter) throws(FilterRefusal) -> any Clusterer
    /// The filtered indexes, counted by the sessions that use them.
    var filters: FilterRegistry { get }
    /// Hands over a message encoded behind the transport's headroom; false when the connection is
    /// gone or was closed for not reading.
    func send(framed: [UInt8], binary: Bool, type: String, to connection: ConnectionID) -> Bool
    /// Hands over a whole text message; false when the connection is gone.
    func send(_ text: [UInt8], type: String, to connection: ConnectionID) -> Bool
    /// Closes the connection with `code` and `reason`.
    func close(_ connection: ConnectionID, code: CloseCode, reason: String)
    /// How viewers prove who they are; nil when they are anonymous (no `--viewer-key`).
    var viewerIdentity: ViewerIdentity? { get }
    /// Queues a session's turn for a worker.
    func schedule(_ session: Session, priority: Workers.Priority)
    /// Whether the service thread runs a turn itself now, the session's last one having taken
    /// `lastTurn`. Service thread only.
    func runsOnServiceThread(lastTurn: Duration) -> Bool
    /// Runs a session's turn on the service thread. Service thread only.
    func runOnServiceThread(_ session: Session)
    /// Posts a `tick` to the session at `deadline`.
    func wake(_ session: Session, at deadline: ContinuousClock.Instant)
    /// Drops a closed session's pending ticks.
    func cancelWakes(of session: Session)
    /// Takes a live index the session stopped serving from, to be let go of off the session's thread.
    func retire(_ index: LiveClusterIndex)
    /// A first batch went out `latency` after its viewport arrived.
    func firstBatchSent(after latency: Duration)
    var metrics: ServerMetrics { get }
    var presence: PresenceBoard { get }
    var logger: Logger { get }
}

/// The keys viewers' tokens are verified with, how long a new session waits for its `auth`, and the
/// property a `tenant` claim is matched against.
struct ViewerIdentity {
    var keys: ViewerKeys
    var authDeadline: Duration
    var tenantColumn: String
}

/// What a session starts with.
struct SessionStart {
    var options: SessionOptions
    /// What `hello` says of the data.
    var dataset: HelloMessage.DatasetInfo
    var clusterOptions: HelloMessage.Options
    var algorithm: Algorithm

    /// How a session starts on a server with `configuration`, serving `dataset`.
    init(
        configuration: ServerConfiguration, encoding: WireEncoding, dataset: LoadedDataset,
        clusterOptions: HelloMessage.Options
    ) {
        options = SessionOptions(
            viewportHz: configuration.viewportHz, pace: configuration.pace, window: configuration.window,
            maxFeatures: configuration.maxFeatures, maxMessageBytes: configuration.maxMessageBytes,
            headroom: WebSocketServer.headroom, encoding: encoding)
        self.dataset = dataset.helloInfo(aggregates: [])
        self.clusterOptions = clusterOptions
        algorithm = configuration.algorithm
    }
}

extension Server: SessionHost {
    func sessionStart(encoding: WireEncoding) -> SessionStart {
        SessionStart(
            configuration: configuration, encoding: encoding, dataset: dataset, clusterOptions: clusterers.options)
    }

    var viewerIdentity: ViewerIdentity? {
        configuration.viewerKeys.map {
            ViewerIdentity(keys: $0, authDeadline: configuration.authDeadline, tenantColumn: configuration.tenantColumn)
        }
    }

    func firstBatchSent(after latency: Duration) {
        metrics.firstBatch(after: latency)
        publisher?.firstBatches.record(latency)
    }

    /// Takes a live index a session stopped serving from, for the index thread to let go of.
    func retire(_ index: LiveClusterIndex) {
        publisher?.retire(index)
    }

    /// The clusterer of an algorithm over the points `filter` lets through, built now (on the caller's
    /// thread, a worker) when no session had it. A build that fails serves no points, never all of them.
    /// - Throws: a new filtered index that would take those in use past `--filter-memory`.
    func clusterer(for algorithm: Algorithm, filter: EffectiveFilter) throws(FilterRefusal) -> any Clusterer {
        guard !filter.isEverything else { return served.clusterer(for: algorithm) }
        if let built = filters.built(algorithm, filter: filter) { return built }
        do {
            // The build, or the wait for another session's build of the same filter, holds this thread.
            return try workers.lendingPlace { try filters.clusterer(for: algorithm, filter: filter) }
        } catch let refusal as FilterRefusal {
            throw refusal
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

    /// Whether the service thread runs a session's turn itself now (``SessionHub``). Service thread only.
    func runsOnServiceThread(lastTurn: Duration) -> Bool {
        hub.runsOnServiceThread(lastTurn: lastTurn)
    }

    /// Runs a session's turn on the service thread. Service thread only.
    func runOnServiceThread(_ session: Session) {
        hub.runOnServiceThread(session)
    }
}
