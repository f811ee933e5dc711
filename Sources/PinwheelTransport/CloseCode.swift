/// A WebSocket close status code (RFC 6455 section 7.4).
public struct CloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code as sent on the wire.
    public let rawValue: UInt16

    public init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    /// 1000: the purpose of the connection is fulfilled.
    public static let normal = CloseCode(rawValue: 1000)
    /// 1001: the server is shutting down (or the page is going away).
    public static let goingAway = CloseCode(rawValue: 1001)
    /// 1002: the peer broke the WebSocket protocol.
    public static let protocolError = CloseCode(rawValue: 1002)
    /// 1003: a frame of a kind the endpoint does not accept (here: binary).
    public static let unsupportedData = CloseCode(rawValue: 1003)
    /// 1005: a close frame without a status code (never sent, only reported).
    public static let noStatus = CloseCode(rawValue: 1005)
    /// 1006: the connection dropped without a close frame (never sent, only reported).
    public static let abnormal = CloseCode(rawValue: 1006)
    /// 1007: a text frame that is not valid UTF-8.
    public static let invalidPayload = CloseCode(rawValue: 1007)
    /// 1008: a policy was violated, e.g. the client stopped reading and its queue hit the cap.
    public static let policyViolation = CloseCode(rawValue: 1008)
    /// 1009: a message larger than the configured maximum.
    public static let messageTooBig = CloseCode(rawValue: 1009)
    /// 1011: the server hit an unexpected condition.
    public static let internalError = CloseCode(rawValue: 1011)
    /// 1013: try again later, e.g. too many sessions.
    public static let tryAgainLater = CloseCode(rawValue: 1013)

    public var description: String { String(rawValue) }
}
