import Testing

@testable import PinwheelCore

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
