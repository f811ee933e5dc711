import Dispatch
import Foundation
import PinwheelCore
import Synchronization
import Testing

@testable import PinwheelServer

@Suite("Thread priorities")
struct ThreadPriorityTests {
    private struct Seen: Equatable {
        var policy: Int32
        var nice: Int32
    }

    /// The calling thread's policy and nice value.
    private static func current() -> Seen {
        Seen(policy: sched_getscheduler(0), nice: getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0))
    }

    /// Applies `priority` on a thread of its own and reads back that thread's policy and nice value.
    private func applied(_ priority: CompactionPriority) -> Seen? {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var seen: Seen?
        let thread = Thread {
            priority.apply()
            seen = Self.current()
            done.signal()
        }
        thread.start()
        guard done.wait(timeout: .now() + 10) == .success else { return nil }
        return seen
    }

    @Test("a compaction on spare cores only is SCHED_IDLE, a yielding one nice +5; the caller is left alone")
    func compactions() {
        let own = Self.current()
        #expect(applied(.spareCoresOnly) == Seen(policy: CompactionPriority.schedIdle, nice: own.nice))
        #expect(applied(.yielding) == Seen(policy: own.policy, nice: min(19, own.nice + Workers.yieldingNiceness)))
        #expect(Self.current() == own)
        #expect(!CompactionPriority.spareCoresOnly.buildsConcurrently && CompactionPriority.yielding.buildsConcurrently)
    }

    @Test("a compaction starts on idle cores only when the machine was judged to have some and it may come back")
    func startingPriority() {
        #expect(CompactionPriority.starting(coresShort: false, judged: false) == .yielding)
        #expect(CompactionPriority.starting(coresShort: true, judged: true) == .yielding)
        #expect(
            CompactionPriority.starting(coresShort: false, judged: true)
                == (CompactionPriority.mayComeBack ? .spareCoresOnly : .yielding))
    }

    @Test("a compaction on idle cores is made to yield from another thread, where Linux lets it")
    func yieldsFromOutside() throws {
        let own = Self.current()
        let started = DispatchSemaphore(value: 0)
        let moved = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var thread: pid_t?
        nonisolated(unsafe) var before: Seen?
        nonisolated(unsafe) var after: Seen?
        Thread {
            CompactionPriority.spareCoresOnly.apply()
            thread = CompactionPriority.currentThread()
            before = Self.current()
            started.signal()
            moved.wait()
            after = Self.current()
            done.signal()
        }.start()
        started.wait()
        let id = try #require(thread)
        #expect(id != getpid())
        CompactionPriority.yielding.apply(toThread: id)
        moved.signal()
        done.wait()
        #expect(before == Seen(policy: CompactionPriority.schedIdle, nice: own.nice))
        let yielded = Seen(policy: own.policy, nice: min(19, own.nice + Workers.yieldingNiceness))
        #expect(after == (CompactionPriority.mayComeBack ? yielded : before))
        #expect(Self.current() == own)
    }

    /// Records the priority of the thread that runs it.
    private final class Probe: WorkerJob {
        let seen = Mutex<Seen?>(nil)
        let ran = DispatchSemaphore(value: 0)

        func run(scratch: inout PlanScratch) {
            seen.withLock { $0 = ThreadPriorityTests.current() }
            ran.signal()
        }
    }

    private func niceOfAWorker(_ workers: Workers) -> Int32? {
        let probe = Probe()
        workers.submit(probe, priority: .request)
        guard probe.ran.wait(timeout: .now() + 10) == .success else { return nil }
        return probe.seen.withLock { $0?.nice }
    }

    @Test("workers run at the process's nice value, yield by 5 when told, and come back where Linux lets them")
    func workersYield() {
        let own = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        let workers = Workers(count: 1, metrics: ServerMetrics())
        defer { workers.stop() }
        #expect(niceOfAWorker(workers) == own)
        workers.setYielding(true)
        #expect(niceOfAWorker(workers) == min(19, own + Workers.yieldingNiceness))
        workers.setYielding(false)
        // Lowering a nice value again takes root or an RLIMIT_NICE that allows it (whether this process
        // may is checked against Linux by `yieldsFromOutside`).
        let back = CompactionPriority.mayComeBack ? own : min(19, own + Workers.yieldingNiceness)
        #expect(niceOfAWorker(workers) == back)
        #expect(getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0) == own)
    }
}
