import CLibWebSockets

extension WebSocketServer {
    /// LWS_CALLBACK_FILTER_NETWORK_CONNECTION, right after `accept`: keeps the connection (0) or
    /// refuses it (1, lws closes the socket at once) with a best-effort 503, when the server is at its
    /// connection cap (``ConnectionAdmission``) or short of descriptors. Lws service thread only.
    func filterNewConnection(fd: Int32) -> Int32 {
        if admission.admits(webSockets: connections.count, starved: AcceptFailures.isStarved) { return 0 }
        counters.refusedConnections.add(1, ordering: .relaxed)
        shim_send_busy_response(fd)
        logRefusals()
        return 1
    }

    /// Counts lws's connection objects: LWS_CALLBACK_WSI_CREATE and LWS_CALLBACK_WSI_DESTROY, which
    /// lws sends protocols[0] for every server connection. Lws service thread only.
    func countConnection(created: Bool) {
        if created { admission.created() } else { admission.destroyed() }
    }

    /// On each service tick: the spare descriptor back when one is free, and the log lines due.
    /// Lws service thread only.
    func tickAdmission() {
        AcceptFailures.rearm()
        logRefusals()
    }

    private func logRefusals() {
        if let line = admission.logLine(now: .now) { lwsl_emit_stderr(Int32(LLL_ERR), line) }
    }

    /// The connection cap, the connections refused at it and the failed accepts (process-wide) since
    /// start. Any thread.
    public var connectionLimits: ConnectionLimits {
        ConnectionLimits(
            cap: counters.connectionCap.load(ordering: .relaxed),
            refused: counters.refusedConnections.load(ordering: .relaxed),
            failedAccepts: AcceptFailures.total)
    }
}

/// How the server fares against its descriptor budget (``DescriptorBudget``).
public struct ConnectionLimits: Sendable, Equatable {
    /// Most connections held at once, a WebSocket counting once and any other connection twice.
    public var cap: Int
    /// Connections refused at once since start.
    public var refused: Int
    /// `accept` calls that failed for want of descriptors since the process started.
    public var failedAccepts: Int
}
