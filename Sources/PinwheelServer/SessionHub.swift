import PinwheelCore
import PinwheelTransport
import Synchronization

/// The transport's delegate: the sessions and the producers' sockets by connection, the session cap,
/// and what the service thread does for sessions (their short turns on a server whose data never
/// changes). It tells the sessions of each index the index thread publishes (``IndexListeners``).
///
/// The delegate methods and the service thread's turns run on the lws service thread; the tables
/// are Mutex-guarded for the index thread and the readers of ``count``.
final class SessionHub: WebSocketServerDelegate, IndexListeners, @unchecked Sendable {
    private unowned let host: any SessionHost
    private let maxSessions: Int
    private let clusterOptions: ClusterOptions
    /// Producers' way in; nil unless a token is configured.
    private let ingest: Ingest?
    private let metrics: ServerMetrics
    private let workers: Workers
    /// Whether the data changes: then no turn runs on the service thread.
    private let live: Bool
    private let sessions = Mutex<[ConnectionID: Session]>([:])
    /// `pinwheel.ingest.v1` connections.
    private let producers = Mutex<[ConnectionID: IngestConnection]>([:])
    /// Service thread only: whether it runs turns itself, and the planning memory they use.
    private var serviceTurns = ServiceThreadTurns()
    private var serviceScratch = PlanScratch()

    /// - Parameters:
    ///   - host: what every session is given (the server, which holds this hub).
    ///   - maxSessions: sessions open at once; the next is closed with 1013.
    init(
        host: any SessionHost, maxSessions: Int, clusterOptions: ClusterOptions, ingest: Ingest?,
        metrics: ServerMetrics, workers: Workers, live: Bool
    ) {
        self.host = host
        self.maxSessions = maxSessions
        self.clusterOptions = clusterOptions
        self.ingest = ingest
        self.metrics = metrics
        self.workers = workers
        self.live = live
    }

    /// Sessions open now; any thread.
    var count: Int { sessions.withLock { $0.count } }

    // MARK: Transport delegate (lws service thread only)

    func webSocketServer(_ server: WebSocketServer, didOpen connection: ConnectionInfo) {
        if connection.subprotocol == IngestConnection.subprotocol {
            return openProducer(connection, server)
        }
        let session = Session(
            connection: connection.id, host: host, encoding: WireEncoding(rawValue: connection.subprotocol) ?? .json)
        let admitted = sessions.withLock { table -> Bool in
            guard table.count < maxSessions else { return false }
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

    func webSocketServer(_ server: WebSocketServer, didReceive text: [UInt8], from connection: ConnectionID) {
        if let producer = producers.withLock({ $0[connection] }) {
            let accepted = producer.receive(text) { [weak host] answer in
                _ = host?.send(answer, type: "ack", to: connection)
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

    func webSocketServer(
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

    /// A producer's socket: kept when the server takes changes and the token is right, else closed
    /// with 1008 and the reason.
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

    /// Whether the service thread runs a session's turn itself now (``ServiceThreadTurns``);
    /// never with live data. Service thread only.
    /// - Parameter lastTurn: how long the session's previous turn took.
    func runsOnServiceThread(lastTurn: Duration) -> Bool {
        !live && serviceTurns.runsHere(workersWaiting: workers.waiting, lastTurn: lastTurn)
    }

    /// Runs a session's turn on the service thread, with that thread's planning memory. Service
    /// thread only.
    func runOnServiceThread(_ session: Session) {
        session.turn(scratch: &serviceScratch, onServiceThread: true)
    }

    // MARK: Index listener (index thread)

    /// Posts `dataChanged` to each session whose served view the changes reach.
    func indexPublished(footprint: ChangeFootprint?, previous: UInt64, now: UInt64) {
        for session in sessions.withLock({ Array($0.values) })
        where session.needsTelling(of: footprint, previous: previous, now: now, options: clusterOptions) {
            session.post(.dataChanged)
        }
    }
}
