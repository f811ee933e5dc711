/// What a ``SessionMachine`` decided during one turn of events, for the server to carry out in order.
public struct SessionActions<Clock: PinwheelClock>: Sendable {
    /// A message to send: its type (for the metrics) and its encoded bytes behind the session's
    /// `headroom` (``SessionOptions/headroom``).
    public struct Message: Sendable {
        public var type: String
        /// The headroom, then the message.
        public var framed: [UInt8]
        public var headroom: Int
        /// A binary frame (`pinwheel.v1+bin`'s batches and expansions); else a text frame.
        public var binary: Bool

        /// The message itself.
        public var payload: ArraySlice<UInt8> { framed[headroom...] }
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
    /// It was read as a move of the view the client had: only what entered and left the view.
    public var servedAsMove = false
    /// The data version the served view's features were read at: a viewport's, or a refresh's.
    public var servedVersion: UInt64?
    /// The served view was computed again over changed data.
    public var refreshed = false
    /// A `settings` opted in to (true) or out of (false) presence.
    public var presence: Bool?
    /// Set by ``SessionMachine/flush(actions:)``, the end of a turn: whether an ack arriving now can
    /// wait for the session's next turn, as nothing waits on it (the plan's last batch is out, no
    /// viewport is held back or due, no timer or refresh pending). It would only tune the pace the
    /// next plan uses, and that turn reads it first.
    public var acknowledgementsCanWait = false

    public init() {}

    /// Queues the encoder's last message.
    mutating func send(_ type: String, _ encoder: MessageEncoder) {
        messages.append(Message(type: type, framed: encoder.framed, headroom: encoder.headroom, binary: false))
    }

    /// Queues the binary encoder's last message.
    mutating func send(_ type: String, _ encoder: BinaryMessageEncoder) {
        messages.append(Message(type: type, framed: encoder.framed, headroom: encoder.headroom, binary: true))
    }
}
