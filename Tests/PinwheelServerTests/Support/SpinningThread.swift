import Foundation
import Synchronization

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

    func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }
}
