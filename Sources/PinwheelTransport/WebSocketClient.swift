import CLibWebSockets
import Synchronization

/// WebSocket client connections on libwebsockets: many per client, one service thread.
///
/// Connect, send and close from any thread; the delegate hears opens, messages and closes on the
/// service thread. Sends before the handshake finishes are queued and go out right after it.
///
/// ```swift
/// let client = WebSocketClient()
/// try client.start(delegate: myDelegate)
/// let id = try client.connect(to: "ws://127.0.0.1:8080/", subprotocol: "pinwheel.v1")
/// client.send(#"{"type":"viewport",…}"#, to: id)
/// client.stop()                                  // every connection closes with 1000
/// ```
public final class WebSocketClient: WebSocketEndpoint, @unchecked Sendable {
    /// What the client was created with.
    public let configuration: WebSocketClientConfiguration

    // Shared with other threads, each safe on its own.
    private let lifecycle = Mutex(Lifecycle.idle)
    private let lastID = Atomic<UInt64>(0)
    let pendingConnects = Mutex<[PendingConnect]>([])

    // Lws service thread only (written by `start` before the thread exists).
    var delegate: (any WebSocketClientDelegate)?
    var connections: [ConnectionID: ClientConnection] = [:]
    var context: OpaquePointer?
    var contextStorage: CStorage?
    /// Every connection's retry policy, in `contextStorage`: ``LWSContextParts/noValidityTimer(in:)``.
    var retryPolicy: UnsafePointer<lws_retry_bo_t>?

    private enum Lifecycle {
        case idle, running, stopped
    }

    /// A `connect` call waiting for the service thread.
    struct PendingConnect: Sendable {
        var id: ConnectionID
        var url: WebSocketURL
        var subprotocol: String?
        var origin: String?
        var startedAt: ContinuousClock.Instant
    }

    /// Creates a client; nothing runs until `start`. Any thread.
    public init(configuration: WebSocketClientConfiguration = WebSocketClientConfiguration()) {
        self.configuration = configuration
        super.init(
            maxQueuedBytesPerConnection: configuration.maxQueuedBytesPerConnection, eventLoop: configuration.eventLoop)
    }

    /// Creates the lws context and starts the service thread. Any thread, once.
    /// - Throws: `TransportError.lwsCallFailed` naming `lws_create_context`.
    public func start(delegate: any WebSocketClientDelegate) throws {
        try lifecycle.withLock { state in
            guard case .idle = state else { throw TransportError.alreadyStarted }
            guard configuration.maxMessageBytes > 0, configuration.maxQueuedBytesPerConnection > 0,
                configuration.writesPerWritable > 0, configuration.txPacketSize > 0
            else {
                throw TransportError.invalidConfiguration(
                    field: "WebSocketClientConfiguration", value: "sizes must be > 0")
            }
            self.delegate = delegate
            let context: OpaquePointer
            do {
                context = try makeContext()
            } catch {
                loop.freeEventLoop()
                throw error
            }
            loop.start(
                context: context, name: "lws-client", owner: self,
                shouldExit: { [unowned self] in mayExit(connectionsLeft: connections.count) },
                beforePolling: { [unowned self] in writeWoken(openConnection) },
                didDestroy: { [unowned self] in didDestroyContext() })
            state = .running
        }
    }

    /// Opens a connection. Returns at once; the delegate hears `didOpen` or `didFailToConnect`. Any thread.
    /// - Parameters:
    ///   - url: `ws://host:port/path` or `wss://…`.
    ///   - subprotocol: sent as Sec-WebSocket-Protocol; nil sends none.
    ///   - origin: sent verbatim as the Origin header; nil sends none (like a non-browser client).
    /// - Returns: the id that names this connection in every later call.
    /// - Throws: `TransportError.invalidURL`, or `.notRunning` before `start` or after `stop`.
    public func connect(to url: String, subprotocol: String? = nil, origin: String? = nil) throws -> ConnectionID {
        let parsed = try WebSocketURL(url)
        guard lifecycle.withLock({ if case .running = $0 { true } else { false } }) else {
            throw TransportError.notRunning
        }
        let id = ConnectionID(rawValue: lastID.add(1, ordering: .relaxed).newValue)
        outboxes.register(id, deflate: configuration.permessageDeflate ? .whenWritten : .off)
        pendingConnects.withLock {
            $0.append(
                PendingConnect(
                    id: id, url: parsed, subprotocol: subprotocol, origin: origin, startedAt: .now))
        }
        loop.wake()
        return id
    }

    /// Closes every connection with 1000, waits up to `configuration.stopTimeout` for servers to
    /// answer, drops the rest, destroys the context and joins the service thread.
    /// Any thread except the service thread.
    public func stop() {
        let started = lifecycle.withLock { state in
            if case .idle = state { return false }
            state = .stopped
            return true
        }
        guard started else { return }
        loop.stopRequested.store(true, ordering: .sequentiallyConsistent)
        loop.wake()
        loop.awaitExit(grace: configuration.stopTimeout)
    }
}
