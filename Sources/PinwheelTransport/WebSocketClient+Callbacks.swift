import CLibWebSockets

/// Service-thread state of one client connection. Lws service thread only.
final class ClientConnection {
    let io: LWSConnection
    let startedAt: ContinuousClock.Instant
    var isOpen = false
    // The server's Sec-WebSocket-Protocol, read while the response headers still exist.
    var subprotocol: String?
    // The strings handed to lws_client_connect_via_info, kept until the connection is gone.
    let storage = CStorage()

    init(io: LWSConnection, startedAt: ContinuousClock.Instant) {
        self.io = io
        self.startedAt = startedAt
    }
}

/// The C callback of the client protocol: finds the client and hands the reason to it.
/// Non-capturing, so it converts to `lws_callback_function`. Lws service thread only.
func clientWebSocketCallback(
    wsi: OpaquePointer?, reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
    input: UnsafeMutableRawPointer?, length: Int
) -> Int32 {
    guard let wsi, let context = lws_get_context(wsi), let raw = lws_context_user(context) else { return 0 }
    let client = Unmanaged<WebSocketClient>.fromOpaque(raw).takeUnretainedValue()
    return client.handle(wsi, reason: reason, input: input, length: length)
}

extension WebSocketClient {
    /// The name of our only protocol entry, which every connection is bound to.
    static let localProtocolName = "pinwheel-client"

    /// Creates the client-only lws context (no listening socket). The thread calling `start`.
    func makeContext() throws -> OpaquePointer {
        let storage = CStorage()
        let protocols = storage.array(of: lws_protocols.self, count: 2)
        protocols[0] = LWSContextParts.protocolEntry(
            name: Self.localProtocolName, txPacketSize: configuration.txPacketSize, in: storage)
        protocols[0].callback = clientWebSocketCallback
        var info = lws_context_creation_info()
        info.port = CONTEXT_PORT_NO_LISTEN
        info.protocols = UnsafePointer(protocols)
        info.extensions = LWSContextParts.extensions(deflate: configuration.permessageDeflate)
        // RAW_ORIGIN: send the Origin we are given, not "http://" + it.
        info.options =
            UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT) | UInt64(LWS_SERVER_OPTION_JUST_USE_RAW_ORIGIN)
            | LWSContextParts.eventLoopOptions(configuration.eventLoop)
        info.user = Unmanaged.passUnretained(self).toOpaque()
        info.foreign_loops = try loop.prepareForeignLoops()
        shim_lws_set_log_level(configuration.lwsLogLevels)
        guard let context = lws_create_context(&info) else {
            throw TransportError.lwsCallFailed(
                function: "lws_create_context", detail: "client, event loop \(configuration.eventLoop.rawValue)")
        }
        contextStorage = storage
        retryPolicy = LWSContextParts.noValidityTimer(in: storage)
        self.context = context
        return context
    }

    /// Dispatches one client protocol callback. Lws service thread only.
    func handle(
        _ wsi: OpaquePointer, reason: lws_callback_reasons, input: UnsafeMutableRawPointer?, length: Int
    ) -> Int32 {
        switch reason {
        case LWS_CALLBACK_CLIENT_FILTER_PRE_ESTABLISH:
            // The response headers are gone by ESTABLISHED.
            connection(of: wsi)?.subprotocol = LWSConnection.header(wsi, WSI_TOKEN_PROTOCOL)
            return 0
        case LWS_CALLBACK_CLIENT_ESTABLISHED:
            guard let connection = connection(of: wsi) else { return -1 }
            opened(connection, wsi)
            return 0
        case LWS_CALLBACK_CLIENT_RECEIVE:
            guard let connection = connection(of: wsi) else { return -1 }
            return connection.io.receive(
                wsi, chunk: UnsafeRawBufferPointer(start: input, count: length), counters: counters
            ) { message, binary in
                delegate?.webSocketClient(self, didReceive: message, binary: binary, from: connection.io.id)
            }
        case LWS_CALLBACK_CLIENT_WRITEABLE:
            guard let connection = connection(of: wsi) else { return -1 }
            noteWritable()
            return connection.io.writeQueued(
                wsi, outboxes: outboxes, limit: configuration.writesPerWritable, counters: counters)
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            let payload = UnsafeMutableRawBufferPointer(start: input, count: length)
            return connection(of: wsi)?.io.notePeerClose(payload) ?? 0
        case LWS_CALLBACK_CLIENT_CLOSED:
            if let connection = connection(of: wsi) {
                // The socket is still open here; lws closes it after this callback.
                let wire = shim_tcp_bytes_received(lws_get_socket_fd(wsi))
                if wire > 0 { counters.wireBytesReceived.add(Int(wire), ordering: .relaxed) }
                finished(connection, failure: nil)
            }
            loop.breakIfExiting(mayExit(connectionsLeft: connections.count))
            return 0
        case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
            if let connection = connection(of: wsi) {
                let text = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
                finished(connection, failure: text ?? "connection failed")
            }
            loop.breakIfExiting(mayExit(connectionsLeft: connections.count))
            return 0
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            drainInbox()
            loop.breakIfExiting(mayExit(connectionsLeft: connections.count))
            return 0
        default:
            return 0
        }
    }

    /// Service thread, after the context is destroyed: drop what lws pointed at.
    func didDestroyContext() {
        contextStorage = nil
        context = nil
        delegate = nil
        connections = [:]
    }

    private func connection(of wsi: OpaquePointer) -> ClientConnection? {
        guard let id = LWSConnection.id(of: wsi) else { return nil }
        return connections[id]
    }

    private func opened(_ connection: ClientConnection, _ wsi: OpaquePointer) {
        connection.isOpen = true
        connection.io.wsi = wsi
        // Messages are compressed as they are written, only where the server accepted the offer.
        connection.io.compresses = configuration.permessageDeflate && LWSConnection.deflateIsActive(wsi)
        counters.openConnections.add(1, ordering: .relaxed)
        counters.totalConnections.add(1, ordering: .relaxed)
        let elapsed = ContinuousClock.now - connection.startedAt
        delegate?.webSocketClient(
            self, didOpen: connection.io.id, subprotocol: connection.subprotocol, connectTime: elapsed)
        // Anything sent before the handshake finished goes out now.
        lws_callback_on_writable(wsi)
    }

    // The end of a connection, opened or not; the delegate hears exactly one of didClose / didFailToConnect.
    private func finished(_ connection: ClientConnection, failure: String?) {
        let id = connection.io.id
        connections[id] = nil
        outboxes.unregister(id)
        if connection.isOpen {
            counters.openConnections.subtract(1, ordering: .relaxed)
            let outcome = connection.io.closeOutcome
            delegate?.webSocketClient(self, didClose: id, code: outcome.code, reason: outcome.reason)
        } else {
            delegate?.webSocketClient(self, didFailToConnect: id, error: failure ?? "closed before the handshake")
        }
    }

    // EVENT_WAIT_CANCELLED: start the stop if asked, start queued connects, and ask for WRITEABLE
    // on every connection that got output or a close since the last wake.
    private func drainInbox() {
        if loop.stopRequested.load(ordering: .sequentiallyConsistent) && !stopping {
            stopping = true
            for id in connections.keys {
                _ = outboxes.requestClose(id, code: .normal, reason: "client stopping", dropQueued: true)
            }
        }
        for request in pendingConnects.withLock({ requests in
            defer { requests = [] }
            return requests
        }) {
            startConnect(request)
        }
        wakeConnections(openConnection)
    }

    /// The state of a connection that may write: before its handshake a connection cannot, and
    /// ESTABLISHED asks for WRITEABLE itself. Lws service thread only.
    func openConnection(_ id: ConnectionID) -> LWSConnection? {
        connections[id].flatMap { $0.isOpen ? $0.io : nil }
    }

    private func startConnect(_ request: PendingConnect) {
        let io = LWSConnection(
            id: request.id, wsi: nil, maxMessageBytes: configuration.maxMessageBytes,
            closeGrace: configuration.closeTimeout)
        io.inflatesMessages = configuration.permessageDeflate
        io.acceptsBinary = true
        let connection = ClientConnection(io: io, startedAt: request.startedAt)
        if stopping {
            outboxes.unregister(request.id)
            delegate?.webSocketClient(self, didFailToConnect: request.id, error: "client stopping")
            return
        }
        connections[request.id] = connection
        let storage = connection.storage
        var info = lws_client_connect_info()
        info.context = context
        info.address = storage.string(request.url.host)
        info.port = Int32(request.url.port)
        info.path = storage.string(request.url.path)
        info.host = storage.string(request.url.hostHeader)
        info.origin = request.origin.map { storage.string($0) }
        info.protocol = request.subprotocol.map { storage.string($0) }
        info.local_protocol_name = storage.string(Self.localProtocolName)
        info.ietf_version_or_minus_one = -1
        info.retry_and_idle_policy = retryPolicy
        info.opaque_user_data = UnsafeMutableRawPointer(bitPattern: UInt(request.id.rawValue))
        if request.url.secure {
            var flags = Int32(LCCSCF_USE_SSL.rawValue)
            if configuration.allowSelfSignedCertificates {
                flags |= Int32(LCCSCF_ALLOW_SELFSIGNED.rawValue | LCCSCF_SKIP_SERVER_CERT_HOSTNAME_CHECK.rawValue)
            }
            info.ssl_connection = flags
        }
        let wsi = lws_client_connect_via_info(&info)
        // lws may already have reported CONNECTION_ERROR from inside the call; report only once.
        if wsi == nil, let pending = connections[request.id] {
            finished(pending, failure: "lws_client_connect_via_info failed for \(request.url.hostHeader)")
        } else if let wsi {
            connection.io.wsi = wsi
        }
    }
}
