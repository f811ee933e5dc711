import Foundation
import Testing

@testable import PinwheelServer

@Suite("A thread's CPU clock")
struct ThreadCPUClockTests {
    @Test("the thread's CPU time grows while it computes and stays while it sleeps")
    func growsOnlyWhileComputing() throws {
        let before = ThreadCPUClock.now()
        var x: UInt64 = 1
        let spinUntil = ContinuousClock.now + .milliseconds(30)
        while ContinuousClock.now < spinUntil { x = x &* 6_364_136_223_846_793_005 &+ 1 }
        let spun = ThreadCPUClock.now()
        #expect(x != 0 && spun - before >= .milliseconds(5))
        Thread.sleep(forTimeInterval: 0.05)
        #expect(ThreadCPUClock.now() - spun < .milliseconds(20))
    }
}

@Suite("Another thread's CPU clock")
struct OtherThreadCPUClockTests {
    @Test("a thread's clock, read from another thread, grows while that thread computes")
    func readsFromOutside() throws {
        let spinning = SpinningThread()
        defer { spinning.stop() }
        // Fails if the clock read from here stands still for 30 s while the thread computes.
        try spinning.waitForCPU(.milliseconds(10))
    }
}
