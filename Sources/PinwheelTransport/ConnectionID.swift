/// Names one WebSocket connection of a `WebSocketServer` or `WebSocketClient` for its whole life.
///
/// Ids start at 1, grow by one per connection and are never reused within one server or client.
public struct ConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The number behind the id.
    public let rawValue: UInt64

    /// Wraps a raw id; only the transport hands out ids that name live connections.
    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    public static func < (lhs: ConnectionID, rhs: ConnectionID) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    public var description: String { "#\(rawValue)" }
}
