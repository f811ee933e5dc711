import Dispatch
import Foundation
import PinwheelCore
import PinwheelTransport
import Synchronization

/// One `pinwheel.ingest.v1` producer: each text frame is a batch of change lines, handled in order on
/// a queue of its own and answered with an `ack` (or an `error` when over the rate) once durable: the
/// queue is suspended from a frame's append to its answer, so frames are answered in order while no
/// thread waits for the log. A
/// frame whose first line is `{"idempotency-key":"…"}` carries that key, as the `Idempotency-Key`
/// header does for `POST /v1/changes`.
final class IngestConnection: Sendable {
    static let subprotocol = "pinwheel.ingest.v1"
    /// Largest frame: a batch of changes.
    static let maxFrameBytes = 1024 * 1024
    /// Frames received and not yet answered; beyond this the producer is not waiting for its acks.
    static let maxPendingFrames = 64

    let id: ConnectionID
    private let ingest: Ingest
    private let producer: String
    /// The tenant the producer's token limits it to; nil when it may change every point.
    private let tenant: String?
    private let queue = DispatchQueue(label: "pinwheel-ingest-connection")
    /// Frames received so far, and those not yet answered.
    private let frames = Mutex((received: UInt64(0), pending: 0))

    init(id: ConnectionID, ingest: Ingest, peer: String, tenant: String? = nil) {
        self.id = id
        self.ingest = ingest
        self.tenant = tenant
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
        let received = ContinuousClock.now
        queue.async { [self] in
            // The next frame starts once this one is answered, from whichever thread answers it.
            queue.suspend()
            answer(frame, number: number, received: received) { [self] reply in
                send(reply)
                frames.withLock { $0.pending -= 1 }
                queue.resume()
            }
        }
        return true
    }

    /// Answers one frame through `reply`, once its changes are durable or it was refused.
    private func answer(
        _ frame: [UInt8], number: UInt64, received: ContinuousClock.Instant,
        reply: @escaping @Sendable ([UInt8]) -> Void
    ) {
        let (key, lines): (String?, ArraySlice<UInt8>)
        switch Self.splitKey(frame) {
        case .success(let split): (key, lines) = split
        case .failure(let problem): return reply(Self.error(frame: number, code: "invalid-key", problem.reason))
        }
        ingest.submit(Array(lines), producer: producer, key: key, tenant: tenant, received: received) {
            [self] outcome in
            reply(message(for: outcome, frame: number))
        }
    }

    /// The reply to frame `number` with this outcome. Any thread.
    private func message(for outcome: Ingest.Outcome, frame number: UInt64) -> [UInt8] {
        switch outcome {
        case .answered(_, let answer):
            return answer.json(frame: number)
        case .tooFast(let retryAfter):
            return Self.error(
                frame: number, code: "too-fast",
                "over \(Int(ingest.rate)) changes per second; nothing of this frame was applied, retry after \(retryAfter) s"
            )
        case .failed(let reason):
            return Self.error(frame: number, code: "not-stored", reason)
        case .refused(let status, let reason):
            let code = status == 409 ? "key-in-flight" : status == 400 ? "invalid-key" : "expired"
            return Self.error(frame: number, code: code, reason)
        }
    }

    /// Why a frame's key line is not one.
    struct KeyProblem: Error {
        let reason: String
    }

    /// The idempotency key of a frame whose first line is `{"idempotency-key":"…"}`, and the lines
    /// after it; a frame without such a line is all change lines.
    static func splitKey(_ frame: [UInt8]) -> Result<(String?, ArraySlice<UInt8>), KeyProblem> {
        let prefix = Array(#"{"idempotency-key":"#.utf8)
        var start = 0
        while start < frame.count, frame[start] == UInt8(ascii: " ") { start += 1 }
        guard frame[start...].starts(with: prefix) else { return .success((nil, frame[...])) }
        let end = frame[start...].firstIndex(of: UInt8(ascii: "\n")) ?? frame.count
        let line = frame[start..<end]
        guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
            object.count == 1, let key = object["idempotency-key"] as? String
        else {
            return .failure(
                KeyProblem(reason: #"a key line must be {"idempotency-key":"<key>"} alone, then the change lines"#))
        }
        return .success((key, frame[min(end + 1, frame.count)...]))
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
