import CLibWebSockets
import Synchronization

/// A WebSocket and HTTP server on one port, on libwebsockets, with one service thread.
///
/// The service thread does network I/O only and calls the delegate; the application sends and
/// closes from any thread. Each connection's outbound queue is capped, so a client that stops
/// reading is closed with 1008 instead of growing memory.
///
/// ```swift
/// var configuration = WebSocketServerConfiguration()
/// configuration.port = 0
/// configuration.staticMounts = [StaticMount(urlPath: "/", directory: "web")]
/// configuration.routes["/healthz"] = { _ in HTTPResponse(text: "ok\n") }
/// let server = WebSocketServer(configuration: configuration)
/// try server.start(delegate: myDelegate)        // myDelegate calls server.send(reply, to: id)
/// print("listening on", server.port)
/// server.stop()                                  // every client gets 1001, the thread is joined
/// ```
public final class WebSocketServer: WebSocketEndpoint, @unchecked Sendable {
    /// What the server was created with.
    public let configuration: WebSocketServerConfiguration
    /// The subprotocol's name as C text, made once: a Swift string handed to C is copied at each call.
    let subprotocolCName: [CChar]

    // Shared with other threads, each safe on its own.
    private let lifecycle = Mutex(Lifecycle.idle)
    private let boundPort = Atomic<Int>(0)
    private let boundAddress = Mutex("")
    let stopClose = Mutex((code: CloseCode.goingAway, reason: "server shutting down"))
    let finishedHTTP = Mutex<[FinishedHTTPRequest]>([])

    // Lws service thread only (written by `start` before the thread exists).
    var delegate: (any WebSocketServerDelegate)?
    var connections: [ConnectionID: LWSConnection] = [:]
    var lastID: UInt64 = 0
    /// Pings silent connections and drops those that stay silent; nil without a keepalive.
    var keepalive: KeepaliveSweep?
    var httpResponses: [UInt: PendingHTTPResponse] = [:]
    /// Route requests whose handler is still running, by connection address: the request's number.
    var httpWaiting: [UInt: UInt64] = [:]
    /// Request bodies being read, by connection address.
    var httpBodies: [UInt: PendingHTTPBody] = [:]
    var nextHTTPSweep = ContinuousClock.now
    var lastHTTPRequest: UInt64 = 0
    /// Every route, a returning handler wrapped to answer through its completion.
    var routes: [String: HTTPDeferredHandler]
    /// The connection cap and the count it is checked against (set by `start`).
    var admission = ConnectionAdmission(cap: Int.max)
    /// The clock of the frame budget and idle timeout sweeps.
    var policing = SweepClock()
    var storage: CStorage?

    private enum Lifecycle {
        case idle, running, stopped
    }

    /// Creates a server; nothing is bound until `start`. Any thread.
    public init(configuration: WebSocketServerConfiguration) {
        self.configuration = configuration
        self.subprotocolCName = Array(configuration.subprotocol.utf8CString)
        self.routes = configuration.deferredRoutes.merging(
            configuration.routes.mapValues { handler -> HTTPDeferredHandler in
                { @Sendable request, respond in respond(handler(request)) }
            }
        ) { deferred, _ in deferred }
        super.init(
            maxQueuedBytesPerConnection: configuration.maxQueuedBytesPerConnection, eventLoop: configuration.eventLoop)
    }

    /// Binds the port, starts the service thread and begins calling `delegate`, which the server
    /// holds until it stopped. Any thread, once.
    /// - Throws: `TransportError.invalidConfiguration` for a bad option, `.lwsCallFailed` naming
    ///   `lws_create_context` or `lws_create_vhost` when lws refuses (port taken, bad TLS files...).
    public func start(delegate: any WebSocketServerDelegate) throws {
        try lifecycle.withLock { state in
            guard case .idle = state else { throw TransportError.alreadyStarted }
            try configuration.validate()
            self.delegate = delegate
            keepalive = configuration.keepalive.map { KeepaliveSweep($0) }
            admission = ConnectionAdmission(cap: configuration.maxConnections ?? DescriptorBudget.current().connections)
            counters.connectionCap.store(admission.cap, ordering: .relaxed)
            AcceptFailures.rearm()
            let (context, port, listening): (OpaquePointer, Int, String)
            do {
                (context, port, listening) = try makeContext()
            } catch {
                loop.freeEventLoop()
                throw error
            }
            boundPort.store(port, ordering: .sequentiallyConsistent)
            boundAddress.withLock { $0 = listening }
            loop.start(
                context: context, name: "lws-server", owner: self,
                shouldExit: { [unowned self] in mayExit(connectionsLeft: connections.count) },
                beforePolling: { [unowned self] in writeWoken { connections[$0] } },
                didDestroy: { [unowned self] in didDestroyContext() })
            state = .running
        }
    }

    /// The bound TCP port (the kernel's choice when the configuration said 0); 0 before `start`. Any thread.
    public var port: Int { boundPort.load(ordering: .sequentiallyConsistent) }

    /// The address and port the kernel bound, read from the listening socket: "127.0.0.1:8080" or
    /// "[::1]:8080"; empty before `start`. Any thread.
    public var listeningAddress: String { boundAddress.withLock { $0 } }

    /// Asks the service thread to close every connection (with the code and reason of the last
    /// `stop` call, 1001 "server shutting down" by default) and end. Returns at once; lock-free,
    /// so a signal-handling path may call it. Any thread.
    public func requestStop() {
        loop.stopRequested.store(true, ordering: .sequentiallyConsistent)
        loop.wake()
    }

    /// Closes every connection with `code` and `reason`, waits up to `configuration.stopTimeout`
    /// for clients to answer, drops the rest, destroys the lws context and joins the service
    /// thread. Any thread except the service thread (a delegate must use `requestStop`).
    public func stop(code: CloseCode = .goingAway, reason: String = "server shutting down") {
        stopClose.withLock { $0 = (code, reason) }
        let started = lifecycle.withLock { state in
            if case .idle = state { return false }
            state = .stopped
            return true
        }
        guard started else { return }
        requestStop()
        loop.awaitExit(grace: configuration.stopTimeout)
    }

    /// Blocks until the service thread ended, which happens only after `stop` or `requestStop`;
    /// connections still closing `configuration.stopTimeout` after the request are dropped.
    /// Returns at once if the server never started. Any thread but the service thread.
    public func waitForExit() {
        guard lifecycle.withLock({ if case .idle = $0 { false } else { true } }) else { return }
        loop.awaitExit(grace: configuration.stopTimeout)
    }
}
