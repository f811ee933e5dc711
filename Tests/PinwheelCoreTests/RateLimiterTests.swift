import Testing

@testable import PinwheelCore

@Suite("Rate limiter")
struct RateLimiterTests {
    @Test("two values pass back to back, later ones at most ten per second, latest wins")
    func coalesces() {
        let clock = ManualClock()
        var limiter = RateLimiter<ManualClock, Int>(clock: clock, perSecond: 10)
        #expect(limiter.offer(1) == .process(1))
        clock.advance(by: .milliseconds(10))
        #expect(limiter.offer(2) == .process(2))
        // Two processed at t = 0 and 10 ms: the third is due one spacing after the average pace.
        let due = ManualClock.Instant(offset: .milliseconds(100))
        clock.advance(by: .milliseconds(10))
        #expect(limiter.offer(3) == .wait(until: due))
        clock.advance(by: .milliseconds(10))
        #expect(limiter.offer(4) == .wait(until: due))
        clock.advance(by: .milliseconds(50))
        #expect(limiter.poll() == .wait(until: due))
        clock.advance(to: due)
        #expect(limiter.poll() == .process(4))
        #expect(limiter.poll() == .idle)
    }

    /// Runs `offers` (time since start, value) through a limiter, firing its timer when due, then
    /// drains it; the values processed, in order.
    func run(_ offers: [(Duration, Int)], perSecond: Double = 10, burst: Int = 2) -> (processed: [Int], held: Int) {
        let clock = ManualClock()
        var limiter = RateLimiter<ManualClock, Int>(clock: clock, perSecond: perSecond, burst: burst)
        var processed: [Int] = []
        var held = 0
        var timer: ManualClock.Instant?
        func handle(_ a: RateLimiter<ManualClock, Int>.Action) {
            switch a {
            case .process(let v): processed.append(v)
            case .wait(let t):
                timer = t
                held += 1
            case .idle: break
            }
        }
        for (at, value) in offers {
            let instant = ManualClock.Instant(offset: at)
            while let t = timer, t <= instant {
                timer = nil
                clock.advance(to: t)
                handle(limiter.poll())
            }
            clock.advance(to: instant)
            handle(limiter.offer(value))
        }
        while let t = timer {
            timer = nil
            clock.advance(to: t)
            handle(limiter.poll())
        }
        return (processed, held)
    }

    @Test("the last value of a burst is always processed, and a second holds at most rate + burst")
    func lastAlwaysProcessed() {
        // 60 Hz for one second: 60 offers.
        let offers = (0..<60).map { (Duration.nanoseconds(Int64($0) * 16_666_667), $0 + 1) }
        let (processed, _) = run(offers)
        #expect(processed.last == 60)
        #expect(processed.count <= 12)
        #expect(processed.count >= 10)
        #expect(processed == processed.sorted())
    }

    @Test("a client sending at the limit with up to 40 ms of jitter is never held back")
    func jitterAtTheLimit() {
        var random = SplitMix64(seed: 7)
        let offers = (0..<200).map { i -> (Duration, Int) in
            let jitter = Int64(random.next() % 80_000_000) - 40_000_000
            return (.nanoseconds(Int64(i) * 100_000_000 + 50_000_000 + jitter), i)
        }
        let (processed, held) = run(offers)
        #expect(held == 0)
        #expect(processed == Array(0..<200))
    }

    @Test("twice the rate for ten seconds is cut to the rate on average")
    func averageRate() {
        let offers = (0..<200).map { (Duration.milliseconds(Int64($0) * 50), $0) }
        let (processed, held) = run(offers)
        // Ten seconds at 10 per second, plus the burst, plus the last value drained after the end.
        #expect(processed.count <= 10 * 10 + 2 + 1)
        #expect(processed.count >= 10 * 10 - 1)
        #expect(held > 0)
        #expect(processed.last == 199)
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
