import Synchronization

/// Counters that the service thread bumps and any thread reads.
final class TransportCounters: Sendable {
    let openConnections = Atomic<Int>(0)
    let totalConnections = Atomic<Int>(0)
    let messagesReceived = Atomic<Int>(0)
    let bytesReceived = Atomic<Int>(0)
    let messagesSent = Atomic<Int>(0)
    let bytesSent = Atomic<Int>(0)
    let wireBytesReceived = Atomic<Int>(0)
    let writablesBeforePolling = Atomic<Int>(0)
    /// The server's connection cap and the connections refused at it (``ConnectionAdmission``).
    let connectionCap = Atomic<Int>(0)
    let refusedConnections = Atomic<Int>(0)

    /// A snapshot together with the queue totals. Any thread.
    func snapshot(outboxes: Outboxes) -> TransportStats {
        let totals = outboxes.totals()
        return TransportStats(
            openConnections: openConnections.load(ordering: .relaxed),
            totalConnections: totalConnections.load(ordering: .relaxed),
            messagesReceived: messagesReceived.load(ordering: .relaxed),
            bytesReceived: bytesReceived.load(ordering: .relaxed),
            messagesSent: messagesSent.load(ordering: .relaxed),
            bytesSent: bytesSent.load(ordering: .relaxed),
            queuedBytes: totals.queuedBytes,
            overCapacityCloses: totals.overCapacityCloses,
            wireBytesReceived: wireBytesReceived.load(ordering: .relaxed),
            writablesBeforePolling: writablesBeforePolling.load(ordering: .relaxed))
    }
}
