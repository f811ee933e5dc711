import Dispatch
import Foundation
import PinwheelCore
import Synchronization
import Testing

@testable import PinwheelServer

@Suite("Worker threads")
struct WorkersTests {
    /// Records the nice value of the thread that runs it.
    private final class NiceProbe: WorkerJob {
        let seen = Mutex<Int32?>(nil)
        let ran = DispatchSemaphore(value: 0)

        func run(scratch: inout PlanScratch) {
            seen.withLock { $0 = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) }
            ran.signal()
        }
    }

    private func niceValueOfAWorker(niceness: Int32) -> Int32? {
        let workers = Workers(count: 1, niceness: niceness, metrics: ServerMetrics())
        defer { workers.stop() }
        let probe = NiceProbe()
        workers.submit(probe, urgent: true)
        guard probe.ran.wait(timeout: .now() + 10) == .success else { return nil }
        return probe.seen.withLock { $0 }
    }

    @Test("with live data the workers' nice value is raised by the live niceness, the calling thread's left alone")
    func liveNiceness() {
        let own = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        #expect(niceValueOfAWorker(niceness: ThreadNiceness.yielding) == min(19, own + ThreadNiceness.yielding))
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == own)
        #expect(niceValueOfAWorker(niceness: 0) == own)
    }
}
