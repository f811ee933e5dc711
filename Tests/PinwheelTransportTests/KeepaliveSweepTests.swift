import Testing

@testable import PinwheelTransport

@Suite("The keepalive sweep's clock and verdicts")
struct KeepaliveSweepTests {
    let start = ContinuousClock.now

    /// Runs sweeps until `count` of them happened, a quarter second apart.
    func sweep(_ sweep: inout KeepaliveSweep, to count: UInt32) {
        var at = start
        while sweep.count < count {
            at += KeepaliveSweep.interval
            _ = sweep.isDue(at: at)
        }
    }

    @Test("a silent peer is pinged after pingAfter, once, and dropped after hangUpAfter")
    func verdicts() {
        var clock = KeepaliveSweep(Keepalive(pingAfter: .seconds(1), hangUpAfter: .seconds(2)), now: start)
        // Heard at sweep 0; 1 s is 4 sweeps, 2 s is 8.
        sweep(&clock, to: 3)
        #expect(clock.verdict(heard: 0, pinged: false) == .quiet)
        sweep(&clock, to: 4)
        #expect(clock.verdict(heard: 0, pinged: false) == .ping)
        #expect(clock.verdict(heard: 0, pinged: true) == .quiet)
        sweep(&clock, to: 7)
        #expect(clock.verdict(heard: 0, pinged: true) == .quiet)
        sweep(&clock, to: 8)
        #expect(clock.verdict(heard: 0, pinged: true) == .hangUp)
        // Heard since: quiet again.
        #expect(clock.verdict(heard: 6, pinged: false) == .quiet)
    }

    @Test("a sweep is due once per interval; a loop that stalled sweeps once, not once per interval missed")
    func due() {
        var clock = KeepaliveSweep(Keepalive(), now: start)
        let offsets: [Duration] = [
            .milliseconds(249), .milliseconds(250), .milliseconds(260), .seconds(10),
            .seconds(10) + .milliseconds(100), .seconds(10) + .milliseconds(250),
        ]
        let due = offsets.map { clock.isDue(at: start + $0) }
        #expect(due == [false, true, false, true, false, true])
        #expect(clock.count == 3)
    }
}
