import CLibWebSockets
import Foundation

extension WebSocketServerConfiguration {
    /// Checks every option that lws would otherwise reject obscurely or silently.
    /// - Throws: `TransportError.invalidConfiguration` naming the option.
    func validate() throws {
        func fail(_ field: String, _ value: Any) -> TransportError {
            .invalidConfiguration(field: field, value: "\(value)")
        }
        guard (0...65535).contains(port) else { throw fail("port", port) }
        guard !host.isEmpty else { throw fail("host", "(empty)") }
        guard !subprotocol.isEmpty, !subprotocol.contains(where: { $0 == "," || $0 == " " }) else {
            throw fail("subprotocol", subprotocol)
        }
        guard maxMessageBytes > 0 else { throw fail("maxMessageBytes", maxMessageBytes) }
        guard maxQueuedBytesPerConnection > 0 else {
            throw fail("maxQueuedBytesPerConnection", maxQueuedBytesPerConnection)
        }
        if let maxConnections, maxConnections < 1 { throw fail("maxConnections", maxConnections) }
        if let framePolicy {
            guard framePolicy.framesPerSecond > 0 else {
                throw fail("framePolicy.framesPerSecond", framePolicy.framesPerSecond)
            }
            guard framePolicy.seconds > 0 else { throw fail("framePolicy.seconds", framePolicy.seconds) }
            if let idle = framePolicy.idleTimeout, idle <= .zero { throw fail("framePolicy.idleTimeout", idle) }
            if let stall = framePolicy.stallTimeout, stall < .seconds(1) {
                throw fail("framePolicy.stallTimeout", stall)
            }
        }
        guard txPacketSize > 0 else { throw fail("txPacketSize", txPacketSize) }
        guard writesPerWritable > 0 else { throw fail("writesPerWritable", writesPerWritable) }
        if let keepalive {
            let ping = keepalive.pingAfter.components.seconds
            let hangUp = keepalive.hangUpAfter.components.seconds
            guard (1...65535).contains(ping) else { throw fail("keepalive.pingAfter", keepalive.pingAfter) }
            guard (ping + 1...65535).contains(hangUp) else {
                throw fail("keepalive.hangUpAfter", keepalive.hangUpAfter)
            }
        }
        guard (2...3600).contains(httpDeadline.components.seconds) else { throw fail("httpDeadline", httpDeadline) }
        guard httpMinimumBodyRate >= 0 else { throw fail("httpMinimumBodyRate", httpMinimumBodyRate) }
        for path in routes.keys where !path.hasPrefix("/") || path.contains("?") {
            throw fail("routes", path)
        }
        for path in deferredRoutes.keys where !path.hasPrefix("/") || path.contains("?") || routes[path] != nil {
            throw fail("deferredRoutes", path)
        }
        for mount in staticMounts {
            guard mount.urlPath.hasPrefix("/") else { throw fail("staticMounts.urlPath", mount.urlPath) }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: mount.directory, isDirectory: &isDirectory),
                isDirectory.boolValue
            else { throw fail("staticMounts.directory (no such directory)", mount.directory) }
        }
        if let tls {
            for path in [tls.certificatePath, tls.privateKeyPath]
            where !FileManager.default.isReadableFile(atPath: path) {
                throw fail("tls (unreadable file)", path)
            }
        }
    }
}

extension WebSocketServer {
    /// Creates the lws context and its one vhost, and reads back the address and port the kernel bound.
    /// The C structures live in `storage` until the context is destroyed. The thread calling `start`.
    func makeContext() throws -> (context: OpaquePointer, port: Int, listening: String) {
        let storage = CStorage()
        let configuration = configuration
        let address = try ListenAddress.resolve(configuration.host)

        // protocols[0] answers plain HTTP (mount callbacks and lws's file serving); [1] is ours, then the
        // other subprotocols, then the terminator.
        let others = configuration.otherSubprotocols.keys.sorted()
        let protocols = storage.array(of: lws_protocols.self, count: 3 + others.count)
        protocols[0] = LWSContextParts.protocolEntry(
            name: Self.httpProtocolName, txPacketSize: configuration.txPacketSize, in: storage)
        protocols[0].callback = serverHTTPCallback
        protocols[1] = LWSContextParts.protocolEntry(
            name: configuration.subprotocol, txPacketSize: configuration.txPacketSize, in: storage)
        // Any per-session size makes lws call WS_SERVER_DROP_PROTOCOL when it starts a close,
        // including the closes it starts itself on a protocol error (see LWSConnection.closeStarted).
        protocols[1].per_session_data_size = MemoryLayout<UInt64>.size
        protocols[1].rx_buffer_size = LWSContextParts.webSocketRxBufferSize
        protocols[1].callback = serverWebSocketCallback
        for (k, name) in others.enumerated() {
            protocols[2 + k] = LWSContextParts.protocolEntry(
                name: name, txPacketSize: configuration.txPacketSize, in: storage)
            protocols[2 + k].per_session_data_size = MemoryLayout<UInt64>.size
            protocols[2 + k].rx_buffer_size = LWSContextParts.webSocketRxBufferSize
            protocols[2 + k].callback = serverWebSocketCallback
        }

        // pvo {subprotocol: {default: 1}}: clients that name no subprotocol are bound to ours, not to http.
        var defaultOption = lws_protocol_vhost_options()
        defaultOption.name = storage.string("default")
        defaultOption.value = storage.string("1")
        var protocolOptions = lws_protocol_vhost_options()
        protocolOptions.name = storage.string(configuration.subprotocol)
        protocolOptions.value = storage.string("")
        protocolOptions.options = UnsafePointer(storage.value(defaultOption))

        var contextInfo = lws_context_creation_info()
        // Without lws's VALIDATE_UTF8: it would check compressed frames as they pass through, and
        // `MessageAssembler` checks every whole text message.
        contextInfo.options =
            UInt64(LWS_SERVER_OPTION_EXPLICIT_VHOSTS) | LWSContextParts.eventLoopOptions(configuration.eventLoop)
        if configuration.tls != nil {
            contextInfo.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
        }
        contextInfo.user = Unmanaged.passUnretained(self).toOpaque()
        contextInfo.foreign_loops = try loop.prepareForeignLoops()
        LWSLog.install(levels: configuration.lwsLogLevels)
        guard let context = lws_create_context(&contextInfo) else {
            throw TransportError.lwsCallFailed(
                function: "lws_create_context", detail: "event loop \(configuration.eventLoop.rawValue)")
        }

        var vhostInfo = lws_context_creation_info()
        vhostInfo.vhost_name = storage.string("pinwheel")
        vhostInfo.port = Int32(configuration.port)
        vhostInfo.iface = storage.string(address.numeric)
        // An address lws cannot bind fails the vhost instead of waiting for the interface to appear.
        vhostInfo.options |= UInt64(LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND)
        switch address.family {
        case .ipv4: vhostInfo.options |= UInt64(LWS_SERVER_OPTION_DISABLE_IPV6)
        case .ipv6:
            vhostInfo.options |=
                UInt64(LWS_SERVER_OPTION_IPV6_V6ONLY_MODIFY) | UInt64(LWS_SERVER_OPTION_IPV6_V6ONLY_VALUE)
        }
        vhostInfo.protocols = UnsafePointer(protocols)
        vhostInfo.pvo = UnsafePointer(storage.value(protocolOptions))
        vhostInfo.mounts = makeMounts(in: storage)
        vhostInfo.extensions = LWSContextParts.extensions(deflate: configuration.permessageDeflate)
        vhostInfo.retry_and_idle_policy = LWSContextParts.noValidityTimer(in: storage)
        vhostInfo.headers = LWSContextParts.securityHeaders(in: storage)
        vhostInfo.timeout_secs_ah_idle = UInt32(
            HTTPBodyPace.headerAllowance(requestDeadline: configuration.httpDeadline).components.seconds)
        if let tls = configuration.tls {
            // lws reads this flag from the vhost's options too; without it the vhost serves plain text.
            vhostInfo.options |= UInt64(LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT)
            vhostInfo.ssl_cert_filepath = storage.string(tls.certificatePath)
            vhostInfo.ssl_private_key_filepath = storage.string(tls.privateKeyPath)
        }
        let listenersBefore = ListenAddress.listeningSockets()
        guard let vhost = lws_create_vhost(context, &vhostInfo) else {
            lws_context_destroy(context)
            let why = address.bindFailure(port: configuration.port) ?? "port taken or TLS files refused?"
            throw TransportError.lwsCallFailed(
                function: "lws_create_vhost",
                detail: "cannot listen on \(address.withPort(configuration.port)) (host \(configuration.host)): \(why)")
        }
        self.storage = storage
        let port = Int(lws_get_vhost_listen_port(vhost))
        // What the kernel bound, from the listening socket lws just made (getsockname).
        let listener = ListenAddress.listeningSockets().subtracting(listenersBefore)
            .compactMap { ListenAddress.bound($0) }.first { $0.port == port }
        guard let listener else {
            lws_context_destroy(context)
            throw TransportError.lwsCallFailed(
                function: "lws_create_vhost", detail: "no listening socket on \(address.withPort(port))")
        }
        return (context, port, listener.address.withPort(listener.port))
    }

    /// The name of protocols[0], also the origin of the callback mounts that reach it.
    static let httpProtocolName = "http"

    // One callback mount per route (exact paths are enforced in the HTTP handler), then the static
    // directories; lws picks the longest matching mountpoint.
    private func makeMounts(in storage: CStorage) -> UnsafePointer<lws_http_mount>? {
        var entries: [lws_http_mount] = []
        for path in Set(configuration.routes.keys).union(configuration.deferredRoutes.keys).sorted() {
            var mount = lws_http_mount()
            mount.mountpoint = storage.string(path)
            mount.mountpoint_len = UInt8(clamping: path.utf8.count)
            mount.origin = storage.string(Self.httpProtocolName)
            mount.origin_protocol = UInt8(LWSMPRO_CALLBACK.rawValue)
            entries.append(mount)
        }
        for staticMount in configuration.staticMounts {
            var mount = lws_http_mount()
            mount.mountpoint = storage.string(staticMount.urlPath)
            mount.mountpoint_len = UInt8(clamping: staticMount.urlPath.utf8.count)
            mount.origin = storage.string(staticMount.directory)
            mount.def = storage.string(staticMount.defaultFile)
            // A file that cannot be opened goes to this protocol's LWS_CALLBACK_HTTP, which answers
            // 404; without it lws 4.1.6 answers nothing and the client times out after 5 s.
            mount.protocol = storage.string(Self.httpProtocolName)
            mount.origin_protocol = UInt8(LWSMPRO_FILE.rawValue)
            entries.append(mount)
        }
        guard !entries.isEmpty else { return nil }
        let list = storage.array(of: lws_http_mount.self, count: entries.count)
        for (index, entry) in entries.enumerated() {
            list[index] = entry
            if index > 0 {
                list[index - 1].mount_next = UnsafePointer(list + index)
            }
        }
        return UnsafePointer(list)
    }

    /// Service thread, after the loop ended and the context is destroyed: drop what lws pointed at.
    func didDestroyContext() {
        storage?.freeAll()
        storage = nil
        delegate = nil
        connections = [:]
        httpResponses = [:]
        httpWaiting = [:]
    }
}
