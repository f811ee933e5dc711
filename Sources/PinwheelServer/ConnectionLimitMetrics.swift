import PinwheelTransport

/// The descriptor budget's figures in Prometheus' text format, appended to `/metrics`.
enum ConnectionLimitMetrics {
    static func text(_ limits: ConnectionLimits) -> String {
        """
        # HELP pinwheel_connection_cap Most connections held at once (the descriptor limit less a reserve; a WebSocket counts once, any other connection twice).
        # TYPE pinwheel_connection_cap gauge
        pinwheel_connection_cap \(limits.cap)
        # HELP pinwheel_connections_refused_total Connections closed at once (with a best-effort 503) because the server was at its connection cap.
        # TYPE pinwheel_connections_refused_total counter
        pinwheel_connections_refused_total \(limits.refused)
        # HELP pinwheel_accept_failures_total accept() calls that failed for want of descriptors.
        # TYPE pinwheel_accept_failures_total counter
        pinwheel_accept_failures_total \(limits.failedAccepts)

        """
    }
}
