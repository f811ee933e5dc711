/// What a ``SessionMachine`` decided during one turn of events, for the server to carry out in order.
public struct SessionActions<Clock: PinwheelClock>: Sendable {
    /// A message to send: its type (for the metrics) and its encoded bytes.
    public struct Message: Sendable {
        public var type: String
        public var bytes: [UInt8]
    }

    /// Messages to send, in order.
    public var messages: [Message] = []
    /// Call ``SessionMachine/tick(actions:)`` at this instant.
    public var wakeAt: Clock.Instant?
    /// Viewport arrival → first batch handed over, for each first batch sent; without any wait for
    /// the client's window (see `windowWaits`).
    public var firstBatchLatencies: [Duration] = []
    /// How long first batches waited for an ack to free the client's window.
    public var windowWaits: [Duration] = []
    /// The viewport this turn started serving (for presence).
    public var served: ViewportMessage?
    /// A `settings` opted in to (true) or out of (false) presence.
    public var presence: Bool?

    public init() {}

    mutating func send(_ type: String, _ bytes: [UInt8]) {
        messages.append(Message(type: type, bytes: bytes))
    }
}
