import Testing

@testable import PinwheelLoad

@Suite("Staleness: when each change was acknowledged")
struct AckLogTests {
    @Test("answers arriving out of version order give each version its own request's age; a gap is in flight")
    func outOfOrder() {
        let log = AckLog()
        let start = ContinuousClock.now
        log.record(first: 1, last: 100, at: start)
        // The request holding 101 ... 200 is still in flight when 201 ... 300 is answered.
        log.record(first: 201, last: 300, at: start + .milliseconds(30))
        let now = start + .milliseconds(100)
        #expect(log.age(of: 0, at: now) == nil, "before the producer's first change")
        #expect(log.age(of: 50, at: now) == .milliseconds(100))
        #expect(log.age(of: 150, at: now) == .zero, "not acknowledged yet: the viewer was faster")
        #expect(log.age(of: 250, at: now) == .milliseconds(70))
        #expect(log.age(of: 301, at: now) == .zero)
        log.record(first: 101, last: 200, at: start + .milliseconds(60))
        #expect(log.age(of: 150, at: now) == .milliseconds(40))
        #expect(log.age(of: 250, at: now) == .milliseconds(70))
        #expect(log.count == 300)
    }
}
