import CLibWebSockets

extension WebSocketServer {
    /// LWS_CALLBACK_FILTER_NETWORK_CONNECTION, right after `accept`: keeps the connection (0) or
    /// refuses it (1, lws closes the socket at once) with a best-effort 503, when the server is at its
    /// connection cap or short of descriptors. Lws service thread only.
    func filterNewConnection(fd: Int32) -> Int32 {
        if admission.admits(starved: AcceptFailures.isStarved) { return 0 }
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
}
