import Foundation
import PinwheelCore

/// Posts changes to a server's `POST /v1/changes` at a steady rate, in requests of `batch` lines, and
/// reports each answer: what a producer of live data does, for `pinwheel feed` and for the producer
/// `pinwheel load --ingest-rate` runs beside its viewers.
public struct Producer: Sendable {
    public struct Options: Sendable {
        public var host: String
        public var port: Int
        public var token: String
        /// Changes per second.
        public var rate: Double = 1000
        /// Lines per request.
        public var batch: Int = 100
        public var timeout: Duration = .seconds(10)

        public init(host: String, port: Int, token: String) {
            self.host = host
            self.port = port
            self.token = token
        }
    }

    /// One answered request.
    public struct Ack: Sendable {
        public var answer: IngestAnswer
        /// Lines sent in the request.
        public var sent: Int
        public var sentAt: ContinuousClock.Instant
        public var ackedAt: ContinuousClock.Instant
    }

    public let options: Options

    public init(options: Options) {
        self.options = options
    }

    /// Sends changes from `source` until it runs dry or `until` passes; a 429 is waited out as its
    /// Retry-After says and the request sent again.
    /// - Parameter onAck: gets every answer, on the calling thread.
    /// - Throws: ``HTTPExchange/Failure`` when the server cannot be reached or refuses a request
    ///   (its status and message).
    public func run(
        source: inout some IteratorProtocol<Change>, until: ContinuousClock.Instant, onAck: (Ack) -> Void
    ) throws(HTTPExchange.Failure) {
        let interval = Duration.seconds(Double(options.batch) / max(options.rate, 0.001))
        var next = ContinuousClock.now
        var writer = JSONWriter(capacity: options.batch * 128)
        while ContinuousClock.now < until {
            writer.reset()
            var lines = 0
            while lines < options.batch, let change = source.next() {
                change.encode(into: &writer)
                writer.byte(UInt8(ascii: "\n"))
                lines += 1
            }
            if lines == 0 { return }
            Producer.sleep(until: next)
            next = max(next + interval, .now - interval)
            try post(writer.bytes, lines: lines, onAck: onAck)
        }
    }

    private static func sleep(until instant: ContinuousClock.Instant) {
        let wait = ContinuousClock.now.duration(to: instant)
        guard wait > .zero else { return }
        Thread.sleep(forTimeInterval: Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18)
    }

    /// Posts one request, waiting out 429s.
    public func post(_ body: [UInt8], lines: Int, onAck: (Ack) -> Void) throws(HTTPExchange.Failure) {
        while true {
            let sentAt = ContinuousClock.now
            let reply = try HTTPExchange.send(
                "POST", host: options.host, port: options.port, path: "/v1/changes",
                headers: [("Authorization", "Bearer \(options.token)"), ("Content-Type", "application/x-ndjson")],
                body: body, timeout: options.timeout)
            if reply.status == 429 {
                let wait = Double(reply.headers["retry-after"] ?? "1") ?? 1
                Thread.sleep(forTimeInterval: wait)
                continue
            }
            guard reply.status == 200 || reply.status == 400 else {
                throw HTTPExchange.Failure(
                    reason: "POST /v1/changes: \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
            }
            do {
                let answer = try IngestAnswer.decode(reply.body)
                onAck(Ack(answer: answer, sent: lines, sentAt: sentAt, ackedAt: .now))
            } catch {
                throw HTTPExchange.Failure(reason: "POST /v1/changes answered \(error)")
            }
            return
        }
    }
}
