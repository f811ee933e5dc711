/// What one viewer's session may do and receive: the limits `pinwheel serve` sets for every session.
public struct SessionOptions: Equatable, Sendable {
    /// Viewports (and algorithm switches' re-sends) served per second on average.
    public var viewportHz: Double
    /// Markers per millisecond of client time, before the client's acks refine it.
    public var pace: Double
    /// Unacknowledged batches in flight.
    public var window: Int
    /// Most features one viewport is served; past it, those nearest the viewport's centre.
    public var maxFeatures: Int
    /// Largest client message, announced in `hello` (the transport enforces it).
    public var maxMessageBytes: Int
    /// Bytes the transport needs before each message (libwebsockets' `LWS_PRE`): messages are encoded
    /// behind that much room, so the transport sends the encoder's bytes as they are.
    public var headroom: Int
    /// How batches and expansions travel: the subprotocol the client chose.
    public var encoding: WireEncoding

    public init(
        viewportHz: Double = 10, pace: Double = 0.5, window: Int = 4, maxFeatures: Int = 10_000,
        maxMessageBytes: Int = 64 * 1024, headroom: Int = 0, encoding: WireEncoding = .json
    ) {
        self.headroom = headroom
        self.encoding = encoding
        self.viewportHz = viewportHz
        self.pace = pace
        self.window = window
        self.maxFeatures = maxFeatures
        self.maxMessageBytes = maxMessageBytes
    }
}
