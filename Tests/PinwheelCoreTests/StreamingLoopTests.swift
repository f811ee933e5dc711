import Testing

@testable import PinwheelCore

/// The whole core path a server drives, with bytes on both sides: client frames are decoded, rate
/// limited, served by the pacer and encoded; a simulated page decodes, applies and acks. It doubles
/// as the reference for wiring these pieces into a server.
@Suite("Streaming loop")
struct StreamingLoopTests {
    /// Stand-in for a clusterer: a grid of points, one per 0.5°, filtered by the box.
    static func features(in box: BBox) -> [Feature] {
        var out: [Feature] = []
        for i in 0..<40 {
            for j in 0..<40 {
                let lat = Double(i) * 0.5 - 10
                let lon = Double(j) * 0.5 - 10
                if box.contains(lat: lat, lon: lon) {
                    out.append(Feature(id: FeatureID(i * 40 + j), lat: lat, lon: lon, count: 1, parent: nil, row: 0))
                }
            }
        }
        return out
    }

    /// What a server session holds.
    struct Session {
        var limiter: RateLimiter<ManualClock, ViewportMessage>
        var flood: FloodDetector<ManualClock>
        var pacer: Pacer<ManualClock>
        var encoder = MessageEncoder(headroom: 16)
        var outbox: [[UInt8]] = []
        var pacerTimer: ManualClock.Instant?
        var limiterTimer: ManualClock.Instant?
        let context = FeatureContext(properties: PropertyTable(columns: ["name"], values: ["a \"pin\""]))

        init(clock: ManualClock) {
            limiter = RateLimiter(clock: clock, perSecond: 10)
            flood = FloodDetector(clock: clock)
            pacer = Pacer(clock: clock, options: PacerOptions(pace: 0.5, window: 4))
        }

        /// One inbound text frame.
        mutating func receive(_ frame: [UInt8]) {
            guard flood.record() == .allow else { return }
            let message: ClientMessage
            do {
                message = try ClientMessage.decode(frame)
            } catch {
                encoder.error(error)
                outbox.append(Array(encoder.message))
                return
            }
            switch message {
            case .viewport(let v): handle(limiter.offer(v))
            case .ack(let ack): carryOut(pacer.acknowledge(ack))
            case .expand, .settings: break
            }
        }

        /// Timers firing.
        mutating func tick(now: ManualClock.Instant) {
            if let t = limiterTimer, now >= t {
                limiterTimer = nil
                handle(limiter.poll())
            }
            if let t = pacerTimer, now >= t {
                pacerTimer = nil
                carryOut(pacer.poll())
            }
        }

        mutating func handle(_ action: RateLimiter<ManualClock, ViewportMessage>.Action) {
            switch action {
            case .process(let v):
                // A server computes the features on a worker, then hands them to the pacer.
                carryOut(pacer.show(seq: v.seq, features: StreamingLoopTests.features(in: v.bbox), viewport: v.bbox))
            case .wait(let t): limiterTimer = t
            case .idle: break
            }
        }

        mutating func carryOut(_ first: Pacer<ManualClock>.Action) {
            var action = first
            while case .send(let batch) = action {
                encoder.batch(batch, context: context)
                outbox.append(Array(encoder.message))
                action = pacer.poll()
            }
            if case .wait(let t) = action { pacerTimer = t }
        }
    }

    @Test("pans at 60 Hz end with the page showing exactly the last viewport's features")
    func pans() throws {
        let clock = ManualClock()
        var session = Session(clock: clock)
        var page: [FeatureID: WireFeature] = [:]
        var lastSeq: UInt64 = 0
        var doneSeqs: [UInt64] = []
        var writer = JSONWriter()

        func pageReads() throws {
            let frames = session.outbox
            session.outbox.removeAll()
            for frame in frames {
                guard case .batch(let b) = try ServerMessage.decode(frame) else {
                    Issue.record("unexpected message \(String(decoding: frame, as: UTF8.self))")
                    continue
                }
                for id in b.remove { #expect(page.removeValue(forKey: id) != nil) }
                for f in b.update { #expect(page.updateValue(f, forKey: f.id) != nil) }
                for f in b.add { #expect(page.updateValue(f, forKey: f.id) == nil) }
                #expect(b.add.allSatisfy { $0.properties["name"] == "a \"pin\"" })
                if b.done { doneSeqs.append(b.seq) }
                ClientMessage.ack(
                    AckMessage(batch: b.batch, applied: b.remove.count + b.add.count + b.update.count, ms: 2)
                )
                .encode(into: &writer)
                session.receive(writer.bytes)
            }
        }

        for step in 0..<120 {
            lastSeq = UInt64(step + 1)
            let west = -12 + Double(step) * 0.1
            let viewport = ClientMessage.viewport(
                ViewportMessage(
                    seq: lastSeq, bbox: BBox(west: west, south: -5, east: west + 6, north: 3), zoom: 8, width: 1600,
                    height: 1200))
            viewport.encode(into: &writer)
            session.receive(writer.bytes)
            try pageReads()
            clock.advance(by: .nanoseconds(16_666_667))
            session.tick(now: clock.now)
            try pageReads()
        }
        // Let every timer run out.
        for _ in 0..<10_000 {
            let next = [session.limiterTimer, session.pacerTimer].compactMap { $0 }.min()
            guard let next else { break }
            clock.advance(to: next)
            session.tick(now: clock.now)
            try pageReads()
        }
        let last = BBox(west: -12 + 119 * 0.1, south: -5, east: -12 + 119 * 0.1 + 6, north: 3)
        #expect(Set(page.keys) == Set(Self.features(in: last).map(\.id)))
        #expect(doneSeqs.last == lastSeq)
        #expect(session.pacer.inFlight.isEmpty)
    }

    @Test("a bad frame gets an error message and the session keeps streaming")
    func badFrame() throws {
        let clock = ManualClock()
        var session = Session(clock: clock)
        session.receive(Array(#"{"type":"viewport","seq":1,"bbox":[0,0,1,1],"zoom":31,"width":800,"height":600}"#.utf8))
        #expect(
            try ServerMessage.decode(session.outbox[0])
                == .error(
                    WireError(
                        .invalidField, field: "zoom", message: "zoom must be between 0 and 24, got 31")))
        session.receive(Array(#"{"type":"viewport","seq":2,"bbox":[0,0,1,1],"zoom":3,"width":800,"height":600}"#.utf8))
        guard case .batch(let b) = try ServerMessage.decode(session.outbox[1]) else {
            Issue.record("no batch after the error")
            return
        }
        #expect(b.seq == 2 && b.add.count == 9)
    }
}
