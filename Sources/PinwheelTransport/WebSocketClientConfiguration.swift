/// Options shared by every connection of one `WebSocketClient`.
public struct WebSocketClientConfiguration: Sendable {
    /// The event loop lws runs on; `.libev` for thousands of connections.
    public var eventLoop: EventLoopBackend = .poll
    /// Offer permessage-deflate to servers.
    public var permessageDeflate: Bool = true
    /// Largest message accepted from a server, in bytes; bigger closes with 1009.
    public var maxMessageBytes: Int = 16 * 1024 * 1024
    /// Largest outbound queue per connection, in bytes; a send past it closes with 1008.
    public var maxQueuedBytesPerConnection: Int = 4 * 1024 * 1024
    /// Largest single lws_write, in bytes.
    public var txPacketSize: Int = 64 * 1024
    /// Messages written per WRITEABLE callback at most.
    public var writesPerWritable: Int = 8
    /// For wss: accept self-signed certificates and skip the host name check (tests, local demos).
    public var allowSelfSignedCertificates: Bool = false
    /// How long a closing connection may take to accept our close frame before lws drops it
    /// (a peer that stopped reading never would).
    public var closeTimeout: Duration = .seconds(3)
    /// How long `stop` waits for servers to answer our 1000 close before dropping them.
    public var stopTimeout: Duration = .seconds(2)
    /// lws log levels (LLL_* bits) sent to stderr; the default keeps errors only.
    public var lwsLogLevels: Int32 = 1

    public init() {}
}
