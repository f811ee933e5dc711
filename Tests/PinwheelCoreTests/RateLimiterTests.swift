import Testing

@testable import PinwheelCore

@Suite("Rate limiter")
struct RateLimiterTests {
    @Test("the first value is processed at once, later ones at most ten per second, latest wins")
    func coalesces() {
        let clock = ManualClock()
        var limiter = RateLimiter<ManualClock, Int>(clock: clock, perSecond: 10)
        #expect(limiter.offer(1) == .process(1))
        let due = clock.now.advanced(by: .milliseconds(100))
        clock.advance(by: .milliseconds(10))
        #expect(limiter.offer(2) == .wait(until: due))
        clock.advance(by: .milliseconds(10))
        #expect(limiter.offer(3) == .wait(until: due))
        clock.advance(by: .milliseconds(50))
        #expect(limiter.poll() == .wait(until: due))
        clock.advance(to: due)
        #expect(limiter.poll() == .process(3))
        #expect(limiter.poll() == .idle)
    }

    @Test("the last value of a burst is always processed")
    func lastAlwaysProcessed() {
        let clock = ManualClock()
        var limiter = RateLimiter<ManualClock, Int>(clock: clock, perSecond: 10)
        var processed: [Int] = []
        var timer: ManualClock.Instant?
        func handle(_ a: RateLimiter<ManualClock, Int>.Action) {
            switch a {
            case .process(let v): processed.append(v)
            case .wait(let t): timer = t
            case .idle: break
            }
        }
        // 60 Hz for one second: 60 offers.
        for v in 1...60 {
            if let t = timer, clock.now >= t {
                timer = nil
                handle(limiter.poll())
            }
            handle(limiter.offer(v))
            clock.advance(by: .nanoseconds(16_666_667))
        }
        while let t = timer {
            timer = nil
            clock.advance(to: t)
            handle(limiter.poll())
        }
        #expect(processed.last == 60)
        #expect(processed.count <= 11)
        #expect(processed == processed.sorted())
    }

    @Test("a value offered after a quiet spell is processed at once")
    func quiet() {
        let clock = ManualClock()
        var limiter = RateLimiter<ManualClock, String>(clock: clock, perSecond: 4)
        #expect(limiter.offer("a") == .process("a"))
        clock.advance(by: .seconds(1))
        #expect(limiter.offer("b") == .process("b"))
        #expect(limiter.spacing == .milliseconds(250))
    }
}

@Suite("Flood detector")
struct FloodDetectorTests {
    func run(_ perSecond: Int, seconds: Int, detector: inout FloodDetector<ManualClock>, clock: ManualClock)
        -> FloodDetector<ManualClock>.Verdict
    {
        let step = Duration.nanoseconds(1_000_000_000 / Int64(perSecond))
        for _ in 0..<(perSecond * seconds) {
            let v = detector.record()
            if v != .allow { return v }
            clock.advance(by: step)
        }
        return .allow
    }

    @Test("101 messages a second for five seconds closes with 1008")
    func floods() {
        let clock = ManualClock()
        var detector = FloodDetector(clock: clock)
        let start = clock.now
        #expect(
            run(101, seconds: 6, detector: &detector, clock: clock)
                == .close(code: 1008, reason: "more than 100 messages/s for 5 s"))
        // The verdict comes during the fifth second, not before.
        #expect(start.duration(to: clock.now) >= .seconds(4))
        #expect(start.duration(to: clock.now) < .seconds(5))
    }

    @Test("100 messages a second is allowed indefinitely")
    func atLimit() {
        let clock = ManualClock()
        var detector = FloodDetector(clock: clock)
        #expect(run(100, seconds: 20, detector: &detector, clock: clock) == .allow)
    }

    @Test("four flooding seconds, a calm one, then four more is not sustained")
    func notSustained() {
        let clock = ManualClock()
        var detector = FloodDetector(clock: clock)
        #expect(run(150, seconds: 4, detector: &detector, clock: clock) == .allow)
        #expect(run(50, seconds: 1, detector: &detector, clock: clock) == .allow)
        #expect(run(150, seconds: 4, detector: &detector, clock: clock) == .allow)
        clock.advance(by: .seconds(3))  // silence also breaks the streak
        #expect(run(150, seconds: 4, detector: &detector, clock: clock) == .allow)
        #expect(run(150, seconds: 1, detector: &detector, clock: clock) != .allow)
    }
}
