import Dispatch
import PinwheelCore
import PinwheelTransport
import Synchronization

/// One `pinwheel.ingest.v1` producer: each text frame is a batch of change lines, handled in order on
/// a queue of its own and answered with an `ack` (or an `error` when over the rate) once durable.
final class IngestConnection: Sendable {
    static let subprotocol = "pinwheel.ingest.v1"
    /// Largest frame: a batch of changes.
    static let maxFrameBytes = 1024 * 1024
    /// Frames received and not yet answered; beyond this the producer is not waiting for its acks.
    static let maxPendingFrames = 64

    let id: ConnectionID
    private let ingest: Ingest
    private let producer: String
    private let queue = DispatchQueue(label: "pinwheel-ingest-connection")
    /// Frames received so far, and those not yet answered.
    private let frames = Mutex((received: UInt64(0), pending: 0))

    init(id: ConnectionID, ingest: Ingest, peer: String) {
        self.id = id
        self.ingest = ingest
        producer = "\(peer)#\(id.rawValue)"
    }

    /// Queues a frame; `send` answers it later, from the queue. False when too many frames wait
    /// (the caller closes the connection). Lws service thread.
    func receive(_ frame: [UInt8], send: @escaping @Sendable ([UInt8]) -> Void) -> Bool {
        let number = frames.withLock { f -> UInt64? in
            guard f.pending < IngestConnection.maxPendingFrames else { return nil }
            f.received += 1
            f.pending += 1
            return f.received
        }
        guard let number else { return false }
        queue.async { [self] in
            send(answer(frame, number: number))
            frames.withLock { $0.pending -= 1 }
        }
        return true
    }

    private func answer(_ frame: [UInt8], number: UInt64) -> [UInt8] {
        switch ingest.submit(frame, producer: producer) {
        case .answered(_, let answer):
            return answer.json(frame: number)
        case .tooFast(let retryAfter):
            return Self.error(
                frame: number, code: "too-fast",
                "over \(Int(ingest.rate)) changes per second; nothing of this frame was applied, retry after \(retryAfter) s"
            )
        case .failed(let reason):
            return Self.error(frame: number, code: "not-stored", reason)
        }
    }

    private static func error(frame: UInt64, code: String, _ message: String) -> [UInt8] {
        var w = JSONWriter(capacity: 96 + message.utf8.count)
        w.raw("{\"type\":\"error\",\"frame\":")
        w.integer(frame)
        w.raw(",\"code\":")
        w.string(code)
        w.raw(",\"message\":")
        w.string(message)
        w.byte(UInt8(ascii: "}"))
        return w.bytes
    }
}
