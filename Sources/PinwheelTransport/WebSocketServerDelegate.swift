/// Who is on the other end of a freshly opened server connection.
public struct ConnectionInfo: Sendable, Equatable {
    /// The id used for `send`, `close` and every later delegate call.
    public var id: ConnectionID
    /// The Origin header, nil when the client sent none (non-browser clients).
    public var origin: String?
    /// The peer's IP address as text.
    public var peerAddress: String
    /// The request path of the upgrade, e.g. "/ws".
    public var path: String
    /// The subprotocol the connection speaks: the configuration's `subprotocol` or one of
    /// `otherSubprotocols`.
    public var subprotocol: String = ""
    /// The upgrade request's Authorization header, nil when absent.
    public var authorization: String?

    public init(
        id: ConnectionID, origin: String?, peerAddress: String, path: String, subprotocol: String = "",
        authorization: String? = nil
    ) {
        self.id = id
        self.origin = origin
        self.peerAddress = peerAddress
        self.path = path
        self.subprotocol = subprotocol
        self.authorization = authorization
    }
}

/// Receives the events of a `WebSocketServer`.
///
/// Every method runs on the lws service thread and must return quickly: hand work to another
/// thread and answer later with `WebSocketServer.send`, which is safe from any thread.
public protocol WebSocketServerDelegate: AnyObject, Sendable {
    /// A client finished the handshake. Lws service thread only.
    func webSocketServer(_ server: WebSocketServer, didOpen connection: ConnectionInfo)
    /// A complete text message arrived (reassembled, inflated, valid UTF-8). Lws service thread only.
    func webSocketServer(_ server: WebSocketServer, didReceive text: [UInt8], from connection: ConnectionID)
    /// The connection is gone; `code` is the peer's close code, ours if we closed, or 1006 if it dropped.
    /// No further calls name `connection`. Lws service thread only.
    func webSocketServer(_ server: WebSocketServer, didClose connection: ConnectionID, code: CloseCode, reason: String)
}
