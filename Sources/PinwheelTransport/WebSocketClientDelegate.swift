/// Receives the events of a `WebSocketClient`.
///
/// Every method runs on the client's lws service thread and must return quickly.
public protocol WebSocketClientDelegate: AnyObject, Sendable {
    /// The handshake finished. `subprotocol` is what the server chose (nil for none);
    /// `connectTime` runs from the `connect` call to the end of the handshake. Lws service thread only.
    func webSocketClient(
        _ client: WebSocketClient, didOpen connection: ConnectionID, subprotocol: String?, connectTime: Duration)
    /// A complete message arrived: text (valid UTF-8), or binary when `binary`. Lws service thread only.
    func webSocketClient(
        _ client: WebSocketClient, didReceive message: [UInt8], binary: Bool, from connection: ConnectionID)
    /// An open connection is gone: the server's close code and reason, ours if we closed, or 1006 if it
    /// dropped. No further calls name `connection`. Lws service thread only.
    func webSocketClient(_ client: WebSocketClient, didClose connection: ConnectionID, code: CloseCode, reason: String)
    /// The connection never opened (refused, handshake rejected, bad subprotocol...); `error` is lws's
    /// explanation. No further calls name `connection`. Lws service thread only.
    func webSocketClient(_ client: WebSocketClient, didFailToConnect connection: ConnectionID, error: String)
}
