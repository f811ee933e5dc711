/// Counters of one server or client since `start`, read without stopping the service thread.
public struct TransportStats: Sendable, Equatable {
    /// Connections open now (handshake done, not yet closed).
    public var openConnections: Int
    /// Connections accepted (server) or established (client) since start.
    public var totalConnections: Int
    /// Complete text messages received.
    public var messagesReceived: Int
    /// Payload bytes of those messages (after inflation).
    public var bytesReceived: Int
    /// Messages handed to lws_write in full.
    public var messagesSent: Int
    /// Payload bytes of those messages (before compression).
    public var bytesSent: Int
    /// Bytes waiting in all outbound queues right now.
    public var queuedBytes: Int
    /// Connections closed because their outbound queue hit the cap.
    public var overCapacityCloses: Int
    /// Client only: bytes the kernel received on the sockets of connections that have closed, as
    /// they came over the wire (compressed, with the handshake and every frame header).
    public var wireBytesReceived: Int = 0
    /// WRITEABLE callbacks lws gave before the loop polled, for output queued since the last poll
    /// (libev; ``EventLoopBackend``): each saves the wait for a poll to report the socket writable.
    public var writablesBeforePolling: Int = 0
}
