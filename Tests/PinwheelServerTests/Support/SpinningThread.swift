import Foundation
import Synchronization
import Testing

@testable import PinwheelServer

/// A thread that computes until stopped, and its CPU clock.
final class SpinningThread: @unchecked Sendable {
    private(set) var clock: clockid_t?
    private(set) var idle: IdleCompaction?
    private let started = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)

    /// - Parameter asIdleCompaction: whether the thread begins as a compaction on idle cores does,
    ///   before it spins (``idle``).
    init(asIdleCompaction: Bool = false) {
        Thread { [self] in
            clock = ThreadCPUClock.ofCurrentThread()
            if asIdleCompaction {
                var state = IdleCompaction()
                state.begin()
                idle = state
            }
            started.signal()
            var x: UInt64 = 1
            while !stopping.load(ordering: .relaxed) { x = x &* 6_364_136_223_846_793_005 &+ 1 }
            if x == 0 { print(x) }
            finished.signal()
        }.start()
        started.wait()
    }

    /// Returns once the thread has computed for `cpu` more of its own CPU time, however long that
    /// takes on a busy machine (at most 30 s).
    func waitForCPU(_ cpu: Duration) throws {
        let clock = try #require(clock)
        let start = ThreadCPUClock.time(of: clock)
        let deadline = ContinuousClock.now + .seconds(30)
        while ThreadCPUClock.time(of: clock) - start < cpu {
            try #require(ContinuousClock.now < deadline, "the spinning thread got no CPU for 30 s")
            Thread.sleep(forTimeInterval: 0.005)
        }
    }

    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }
}
