/// The server's rules for sessions that only cost: a frame budget that counts every frame a client
/// sends, pings included, and an idle timeout that only application messages reset.
public struct FramePolicy: Sendable, Equatable {
    /// Frames per second tolerated (data and control frames alike).
    public var framesPerSecond: Int
    /// Seconds in a row over `framesPerSecond` before the connection is closed with 1008.
    public var seconds: Int
    /// Time without a text or binary message after which the connection is closed with 1000;
    /// pings and pongs do not count. nil: never.
    public var idleTimeout: Duration?
    /// Time a connection may have output waiting while its peer takes none of it (the kernel's count
    /// of bytes it acknowledged does not move) before it is closed with 1008 "client is not reading":
    /// batches, presence and everything else alike. nil: only the queue cap closes it.
    public var stallTimeout: Duration? = .seconds(20)
    /// Subprotocols whose data messages another limit governs (an ingest rate): on their
    /// connections only control frames count against the budget.
    public var messagesExempt: Set<String> = []

    public init(framesPerSecond: Int = 100, seconds: Int = 5, idleTimeout: Duration? = .seconds(600)) {
        self.framesPerSecond = framesPerSecond
        self.seconds = seconds
        self.idleTimeout = idleTimeout
    }

    /// The close reason of a connection over the frame budget.
    var floodReason: String { "more than \(framesPerSecond) frames/s (pings included) for \(seconds) s" }

    /// The close reason of an idle connection.
    var idleReason: String {
        "no message for \(idleTimeout.map { "\($0.components.seconds)" } ?? "?") s (pings do not count)"
    }
}

/// One connection's account under ``FramePolicy``, sampled about once a second by the server's sweep.
///
/// lws 4.1.6 answers pings itself and tells the application nothing (no LWS_CALLBACK_RECEIVE_PING:
/// ops-ws.c stashes the payload and queues the pong). The frames it hides are found in the kernel's
/// count of bytes received on the socket (TCP_INFO): what is left after the data frames' payloads and
/// a generous allowance for their headers (and TLS records) came in control frames, each at least
/// 6 bytes (2 of header and a 4-byte mask: RFC 6455 §5.2). So a ping flood is counted in full, a
/// client that pings with payloads is counted as more frames than it sent, and data frames never
/// count as control frames. Lws service thread only.
struct FrameBudget {
    /// The smallest frame a client can send.
    static let smallestFrame = 6
    /// Most header bytes of one data frame from a client (2 + 8 of length + 4 of mask).
    static let dataFrameHeader = 14
    /// Most bytes a TLS record adds (TLS 1.2 AES-GCM: 5 of header, 8 of explicit nonce, 16 of tag).
    static let tlsRecord = 29

    /// Kernel bytes received when the account was last sampled; nil before the first sample.
    private var wireAtSample: Int64?
    /// Payload bytes and RECEIVE callbacks since the last sample.
    private var payloadBytes = 0
    private var chunks = 0
    /// Complete messages since the last sample.
    private var messages = 0
    /// The sweep of the last sample, and of the last complete message.
    private var sampledAtSweep: UInt32 = 0
    private(set) var lastMessageAtSweep: UInt32 = 0
    /// Samples in a row over the budget.
    private var streak = 0
    /// The kernel's count of bytes the peer acknowledged at the last sample, and the samples in a
    /// row that found output waiting and that count unchanged.
    private var ackedAtSample: Int64 = -1
    private var stalledSamples = 0
    /// Whether complete messages count as frames (see ``FramePolicy/messagesExempt``).
    private let countsMessages: Bool

    /// An account opened at sweep `sweep`, the socket having received `wire` bytes so far (the
    /// upgrade request; -1 when the kernel does not say).
    init(atSweep sweep: UInt32, wire: Int64, countsMessages: Bool) {
        sampledAtSweep = sweep
        lastMessageAtSweep = sweep
        wireAtSample = wire >= 0 ? wire : nil
        self.countsMessages = countsMessages
    }

    /// A RECEIVE chunk of `bytes` payload bytes.
    mutating func chunkArrived(bytes: Int) {
        payloadBytes += bytes
        chunks += 1
    }

    /// A complete text or binary message, during sweep `sweep`.
    mutating func messageArrived(atSweep sweep: UInt32) {
        messages += 1
        lastMessageAtSweep = sweep
    }

    /// Whether a sample is due at sweep `sweep` (one a second).
    func isDue(atSweep sweep: UInt32, sweepsPerSecond: UInt32) -> Bool {
        sweep &- sampledAtSweep >= sweepsPerSecond
    }

    /// Takes a sample with the kernel's byte count `wire` (-1 when unknown: then only messages count).
    /// - Returns: true when the connection has been over the budget for `policy.seconds` samples in a row.
    mutating func sample(
        wire: Int64, atSweep sweep: UInt32, sweepsPerSecond: UInt32, tls: Bool, policy: FramePolicy
    ) -> Bool {
        let elapsedSweeps = max(1, sweep &- sampledAtSweep)
        var frames = countsMessages ? messages : 0
        if wire >= 0, let before = wireAtSample {
            let allowance = chunks * (Self.dataFrameHeader + (tls ? Self.tlsRecord : 0))
            let control = Int(wire - before) - payloadBytes - allowance
            if control > 0 { frames += control / Self.smallestFrame }
        }
        if wire >= 0 { wireAtSample = wire }
        payloadBytes = 0
        chunks = 0
        messages = 0
        sampledAtSweep = sweep
        // Per second, whatever the sweeps' lateness.
        let rate = Double(frames) * Double(sweepsPerSecond) / Double(elapsedSweeps)
        streak = rate > Double(policy.framesPerSecond) ? streak + 1 : 0
        return streak >= policy.seconds
    }

    /// Notes at a sample whether output waits (`pending`) and the peer's acknowledged bytes (`acked`).
    /// - Returns: the samples in a row, about seconds, that output waited and the peer took none of it.
    mutating func sampleOutput(pending: Bool, acked: Int64) -> Int {
        stalledSamples = pending && acked >= 0 && acked == ackedAtSample ? stalledSamples + 1 : 0
        ackedAtSample = acked
        return stalledSamples
    }

    /// Whether the connection has sent no message for `idleSweeps` sweeps.
    func isIdle(atSweep sweep: UInt32, idleSweeps: UInt32) -> Bool {
        sweep &- lastMessageAtSweep >= idleSweeps
    }
}
