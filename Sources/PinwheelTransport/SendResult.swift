/// What `send` did with a message.
public enum SendResult: Sendable, Equatable {
    /// The message is queued; `queuedBytes` is the connection's outbound queue after adding it.
    case queued(queuedBytes: Int)
    /// The message would have pushed the queue past the cap: the queue was dropped and the
    /// connection is being closed with 1008 ("client is not reading").
    case overCapacity
    /// The connection is closed, closing, or was never known; nothing was queued.
    case notConnected
}
