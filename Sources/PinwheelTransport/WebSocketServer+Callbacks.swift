import CLibWebSockets

/// The C callback of the WebSocket protocol: finds the server and hands the reason to it.
/// Non-capturing, so it converts to `lws_callback_function`. Lws service thread only.
func serverWebSocketCallback(
    wsi: OpaquePointer?, reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
    input: UnsafeMutableRawPointer?, length: Int
) -> Int32 {
    guard let wsi, let server = WebSocketServer.owner(of: wsi) else { return 0 }
    return server.handleWebSocket(wsi, reason: reason, input: input, length: length)
}

extension WebSocketServer {
    /// The server whose context `wsi` belongs to (the context user pointer, unretained). Lws service thread only.
    static func owner(of wsi: OpaquePointer) -> WebSocketServer? {
        guard let context = lws_get_context(wsi), let raw = lws_context_user(context) else { return nil }
        return Unmanaged<WebSocketServer>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Dispatches one WebSocket protocol callback. Lws service thread only.
    func handleWebSocket(
        _ wsi: OpaquePointer, reason: lws_callback_reasons, input: UnsafeMutableRawPointer?, length: Int
    ) -> Int32 {
        switch reason {
        case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
            guard let refusal = upgradeRefusal(wsi) else { return 0 }
            return refuseAndClose(wsi, refusal)
        case LWS_CALLBACK_FILTER_HTTP_CONNECTION:
            // Plain HTTP requests reach the default protocol (this one) before their mount binds them.
            return filterHTTP(wsi) != 0 ? -1 : 0
        case LWS_CALLBACK_ADD_HEADERS:
            promiseNoContextTakeover(wsi, input?.assumingMemoryBound(to: lws_process_html_args.self))
            return 0
        case LWS_CALLBACK_ESTABLISHED:
            opened(wsi)
            return 0
        case LWS_CALLBACK_RECEIVE:
            guard let connection = connection(of: wsi) else { return -1 }
            connection.heard(atSweep: keepalive?.count ?? 0)
            connection.frames.chunkArrived(bytes: length)
            return connection.receive(
                wsi, chunk: UnsafeRawBufferPointer(start: input, count: length), counters: counters
            ) { message, _ in
                connection.frames.messageArrived(atSweep: policing.count)
                delegate?.webSocketServer(self, didReceive: message, from: connection.id)
            }
        case LWS_CALLBACK_RECEIVE_PONG:
            connection(of: wsi)?.heard(atSweep: keepalive?.count ?? 0)
            return 0
        case LWS_CALLBACK_SERVER_WRITEABLE:
            guard let connection = connection(of: wsi) else { return -1 }
            noteWritable()
            return connection.writeQueued(
                wsi, outboxes: outboxes, limit: configuration.writesPerWritable, counters: counters)
        case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
            let payload = UnsafeMutableRawBufferPointer(start: input, count: length)
            return connection(of: wsi)?.notePeerClose(payload) ?? 0
        case LWS_CALLBACK_WS_SERVER_DROP_PROTOCOL:
            connection(of: wsi)?.closeStarted(wsi, grace: configuration.closeTimeout)
            return 0
        case LWS_CALLBACK_TIMER:
            // The close handshake's grace ran out (the only timer we set): -1 drops the connection.
            return -1
        case LWS_CALLBACK_CLOSED:
            closed(wsi)
            loop.breakIfExiting(mayExit(connectionsLeft: connections.count))
            return 0
        case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
            // Lws tells every protocol of the vhost; the main one drains, once per wake.
            guard isMainProtocol(wsi) else { return 0 }
            drainInbox()
            tickAdmission()
            sweepFramePolicy()
            if keepalive?.isDue(at: .now) == true { sweepKeepalive() }
            if !httpBodies.isEmpty { sweepHTTPBodies(at: .now) }
            loop.breakIfExiting(mayExit(connectionsLeft: connections.count))
            return 0
        default:
            return 0
        }
    }

    /// True for a wsi of the configuration's `subprotocol` (not one of the others).
    private func isMainProtocol(_ wsi: OpaquePointer) -> Bool {
        guard let name = lws_get_protocol(wsi)?.pointee.name else { return true }
        return strcmp(name, subprotocolCName) == 0
    }

    private func connection(of wsi: OpaquePointer) -> LWSConnection? {
        guard let id = LWSConnection.id(of: wsi) else { return nil }
        return connections[id]
    }

    // The answer to an upgrade that may not go on: 503 while stopping, 400 for a malformed request,
    // 403 with the reason for an origin the rule refuses (lws 4.1 would only drop the socket).
    // Requests without an Origin header come from non-browser clients, which the browser's
    // same-origin protection does not concern; an empty one names no origin and is refused.
    private func upgradeRefusal(_ wsi: OpaquePointer) -> HTTPResponse? {
        if loop.stopRequested.load(ordering: .sequentiallyConsistent) {
            return HTTPResponse(status: 503, text: "the server is stopping\n")
        }
        if let problem = HTTPRequestRules.problem(wsi, takesBody: false) {
            return HTTPResponse(status: 400, text: problem + "\n")
        }
        let origin = LWSConnection.header(wsi, WSI_TOKEN_ORIGIN) ?? (Self.hasEmptyOrigin(wsi) ? "" : nil)
        let host = LWSConnection.header(wsi, WSI_TOKEN_HOST)
        let reason = configuration.allowedOrigins.refusal(origin: origin, host: host, secure: configuration.tls != nil)
        return reason.map { HTTPResponse(status: 403, text: $0 + "\n") }
    }

    // lws reports an empty header as absent (length 0); its fragment list still holds it.
    private static func hasEmptyOrigin(_ wsi: OpaquePointer) -> Bool {
        var byte: CChar = 0
        return lws_hdr_copy_fragment(wsi, &byte, 1, WSI_TOKEN_ORIGIN, 0) == 0
    }

    // The upgrade response: with permessage-deflate, tell the client to compress each message on its
    // own, as `MessageAssembler` inflates each whole message alone. lws writes its one extension line
    // with room to spare, so the promise always goes out; a client that compressed with context anyway
    // would be closed with 1007 at its second message.
    private func promiseNoContextTakeover(_ wsi: OpaquePointer, _ args: UnsafeMutablePointer<lws_process_html_args>?) {
        guard configuration.permessageDeflate, let args, let p = args.pointee.p else { return }
        let end = UnsafeMutableRawPointer(p).assumingMemoryBound(to: UInt8.self)
        // lws 4.1.6 sets `max_len` (the room left in its buffer) and `p` for this callback, not `len`.
        let room = Int(args.pointee.max_len)
        guard let added = DeflateNegotiation.promiseNoContextTakeover(before: end, room: room) else { return }
        args.pointee.p = p + added
    }

    private func opened(_ wsi: OpaquePointer) {
        lastID += 1
        let id = ConnectionID(rawValue: lastID)
        LWSConnection.attach(id, to: wsi)
        let subprotocol =
            lws_get_protocol(wsi).flatMap { $0.pointee.name.map { String(cString: $0) } }
            ?? configuration.subprotocol
        connections[id] = LWSConnection(
            id: id, wsi: wsi,
            maxMessageBytes: configuration.otherSubprotocols[subprotocol] ?? configuration.maxMessageBytes,
            closeGrace: configuration.closeTimeout)
        connections[id]?.heard(atSweep: keepalive?.count ?? 0)
        if let connection = connections[id] { openFrameBudget(connection, wsi, subprotocol: subprotocol) }
        let offer = LWSConnection.header(wsi, WSI_TOKEN_EXTENSIONS)
        let compresses = configuration.permessageDeflate && LWSConnection.deflateIsActive(wsi)
        connections[id]?.compresses = compresses
        connections[id]?.inflatesMessages = compresses
        outboxes.register(id, deflate: .server(compresses: connections[id]?.compresses == true, offer: offer))
        counters.openConnections.add(1, ordering: .relaxed)
        counters.totalConnections.add(1, ordering: .relaxed)
        var peer = [CChar](repeating: 0, count: 64)
        let address = lws_get_peer_simple(wsi, &peer, peer.count).map { String(cString: $0) } ?? ""
        let info = ConnectionInfo(
            id: id, origin: LWSConnection.header(wsi, WSI_TOKEN_ORIGIN), peerAddress: address,
            path: LWSConnection.header(wsi, WSI_TOKEN_GET_URI) ?? "/", subprotocol: subprotocol,
            authorization: LWSConnection.header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION))
        if stopping {
            // Accepted just as the stop began: it gets the same close as everyone else.
            let stop = stopClose.withLock { $0 }
            _ = outboxes.requestClose(id, code: stop.code, reason: stop.reason, dropQueued: true)
            connections[id]?.wake(wsi, close: stop)
        }
        delegate?.webSocketServer(self, didOpen: info)
    }

    private func closed(_ wsi: OpaquePointer) {
        guard let connection = connection(of: wsi) else { return }
        connections[connection.id] = nil
        outboxes.unregister(connection.id)
        counters.openConnections.subtract(1, ordering: .relaxed)
        let outcome = connection.closeOutcome
        delegate?.webSocketServer(self, didClose: connection.id, code: outcome.code, reason: outcome.reason)
    }

    // EVENT_WAIT_CANCELLED: start the stop if one was asked for, then ask lws for a WRITEABLE on
    // every connection that got output or a close since the last wake.
    private func drainInbox() {
        if loop.stopRequested.load(ordering: .sequentiallyConsistent) && !stopping {
            stopping = true
            let stop = stopClose.withLock { $0 }
            for id in connections.keys {
                _ = outboxes.requestClose(id, code: stop.code, reason: stop.reason, dropQueued: true)
            }
        }
        finishHTTP()
        wakeConnections { connections[$0] }
    }

    // Pings the connections that went silent and drops those that stayed silent after it.
    private func sweepKeepalive() {
        guard let keepalive else { return }
        for connection in connections.values {
            guard let wsi = connection.wsi else { continue }
            switch keepalive.verdict(heard: connection.heardAtSweep, pinged: connection.pinged) {
            case .quiet: break
            case .ping: connection.schedulePing(wsi)
            case .hangUp: connection.drop(wsi, reason: "no answer to a ping")
            }
        }
    }
}
