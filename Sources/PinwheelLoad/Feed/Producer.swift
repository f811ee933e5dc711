import Foundation
import PinwheelCore
import Synchronization

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
        /// Spread the requests at random between half and one and a half times their mean interval,
        /// so they keep no fixed phase to the server's refreshes; nil sends them evenly. The seed.
        public var jitter: UInt64?

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
        /// The position of the request's first change in the order the source gave them.
        public var first: Int
        /// Taken just before the request was sent.
        public var sentAt: ContinuousClock.Instant
        public var ackedAt: ContinuousClock.Instant
    }

    public let options: Options

    public init(options: Options) {
        self.options = options
    }

    /// Sends changes from `source` until it runs dry or `until` passes, one request at a time, in
    /// order; a 429 is waited out as its Retry-After says and the request sent again.
    /// - Parameter onAck: gets every answer, on the calling thread.
    /// - Throws: ``HTTPExchange/Failure`` when the server cannot be reached or refuses a request
    ///   (its status and message).
    public func run(
        source: inout some IteratorProtocol<Change>, until: ContinuousClock.Instant, onAck: (Ack) -> Void
    ) throws(HTTPExchange.Failure) {
        try schedule(source: &source, until: until) { (body, lines, first) throws(HTTPExchange.Failure) in
            try post(body, lines: lines, first: first, onAck: onAck)
        }
    }

    /// Like ``run(source:until:onAck:)`` with up to `inFlight` requests at once, so answers that slow
    /// down under load do not lower the rate asked (a producer that waits for each answer measures a
    /// busy server at less than the load it was asked to give). Requests may be applied out of order.
    /// - Parameter onAck: gets every answer, one at a time, on the thread that sent its request.
    /// - Throws: the first request's failure, once the requests in flight are answered.
    public func run(
        source: inout some IteratorProtocol<Change>, until: ContinuousClock.Instant, inFlight: Int,
        onAck: @escaping @Sendable (Ack) -> Void
    ) throws(HTTPExchange.Failure) {
        let requests = max(inFlight, 1)
        let slots = DispatchSemaphore(value: requests)
        let failure = Mutex<HTTPExchange.Failure?>(nil)
        let answering = Mutex(())
        var stopped: HTTPExchange.Failure?
        do throws(HTTPExchange.Failure) {
            try schedule(source: &source, until: until) { (body, lines, first) throws(HTTPExchange.Failure) in
                slots.wait()
                if let first = failure.withLock({ $0 }) {
                    slots.signal()
                    throw first
                }
                DispatchQueue.global().async {
                    defer { slots.signal() }
                    do throws(HTTPExchange.Failure) {
                        try post(body, lines: lines, first: first) { ack in answering.withLock { _ in onAck(ack) } }
                    } catch {
                        failure.withLock { $0 = $0 ?? error }
                    }
                }
            }
        } catch {
            stopped = error
        }
        // Every request answered; libdispatch requires a semaphore back at its first value when freed.
        for _ in 0..<requests { slots.wait() }
        for _ in 0..<requests { slots.signal() }
        if let first = stopped ?? failure.withLock({ $0 }) { throw first }
    }

    /// Encodes `batch` changes at a time from `source` and hands each request to `send` (body, lines,
    /// position of its first change) at the rate asked, until `source` runs dry or `until` passes. After
    /// a late send it catches up by at most one request.
    private func schedule(
        source: inout some IteratorProtocol<Change>, until: ContinuousClock.Instant,
        send: ([UInt8], Int, Int) throws(HTTPExchange.Failure) -> Void
    ) throws(HTTPExchange.Failure) {
        let interval = Duration.seconds(Double(options.batch) / max(options.rate, 0.001))
        var next = ContinuousClock.now
        var taken = 0
        var random = options.jitter.map { SplitMix64(seed: $0) }
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
            var spacing = interval
            if random != nil { spacing = interval * (0.5 + random!.nextUnit()) }
            next = max(next + spacing, .now - spacing)
            try send(writer.bytes, lines, taken)
            taken += lines
        }
    }

    private static func sleep(until instant: ContinuousClock.Instant) {
        let wait = ContinuousClock.now.duration(to: instant)
        guard wait > .zero else { return }
        Thread.sleep(forTimeInterval: Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18)
    }

    /// Posts one request, waiting out 429s.
    /// - Parameter first: the position of its first change in the source's order, for the answer.
    public func post(_ body: [UInt8], lines: Int, first: Int = 0, onAck: (Ack) -> Void) throws(HTTPExchange.Failure) {
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
                onAck(Ack(answer: answer, sent: lines, first: first, sentAt: sentAt, ackedAt: .now))
            } catch {
                throw HTTPExchange.Failure(reason: "POST /v1/changes answered \(error)")
            }
            return
        }
    }
}
