import CLibWebSockets

extension WebSocketServer {
    /// Opens a connection's account under the frame policy, at ESTABLISHED. Lws service thread only.
    func openFrameBudget(_ connection: LWSConnection, _ wsi: OpaquePointer, subprotocol: String) {
        guard let policy = configuration.framePolicy else { return }
        connection.frames = FrameBudget(
            atSweep: policing.count, wire: shim_tcp_bytes_received(lws_get_socket_fd(wsi)),
            countsMessages: !policy.messagesExempt.contains(subprotocol))
    }

    /// On each service tick, once per ``SweepClock/interval``: closes connections idle past the
    /// idle timeout (1000) and, about once a second each, samples every connection's frame budget and
    /// output, closing those over the budget or whose peer took no output for the stall timeout
    /// (1008). Lws service thread only.
    func sweepFramePolicy() {
        guard let policy = configuration.framePolicy, policing.isDue(at: .now) else { return }
        let sweep = policing.count
        let idleSweeps = policy.idleTimeout.map { SweepClock.sweeps(in: $0) }
        let perSecond = SweepClock.sweepsPerSecond
        let tls = configuration.tls != nil
        for connection in connections.values {
            guard let wsi = connection.wsi else { continue }
            if let idleSweeps, connection.frames.isIdle(atSweep: sweep, idleSweeps: idleSweeps) {
                close(connection.id, code: .normal, reason: policy.idleReason)
                continue
            }
            guard connection.frames.isDue(atSweep: sweep, sweepsPerSecond: perSecond) else { continue }
            var (received, acked, waiting): (Int64, Int64, Int64) = (-1, -1, -1)
            _ = shim_tcp_counts(lws_get_socket_fd(wsi), &received, &acked, &waiting)
            if connection.frames.sample(
                wire: received, atSweep: sweep, sweepsPerSecond: perSecond, tls: tls, policy: policy)
            {
                close(connection.id, code: .policyViolation, reason: policy.floodReason)
                continue
            }
            guard let stall = policy.stallTimeout else { continue }
            // Output waits in the kernel (the peer's window is shut when it reads nothing), in lws or
            // in the queue; the kernel grows its buffer for a while, so the first is what shows first.
            let pending =
                waiting > 0 || lws_partial_buffered(wsi) != 0 || (outboxes.queuedBytes(for: connection.id) ?? 0) > 0
            let stalled = connection.frames.sampleOutput(pending: pending, acked: acked)
            if stalled >= stall.components.seconds {
                // It reads nothing, so it will not read a Close either: drop it after the close grace.
                _ = outboxes.requestClose(
                    connection.id, code: .policyViolation, reason: Outboxes.notReadingReason, dropQueued: true)
                connection.wake(wsi, close: (.policyViolation, Outboxes.notReadingReason))
            }
        }
    }
}
