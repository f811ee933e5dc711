import Dispatch
import Foundation
import PinwheelCore
import Synchronization
import Testing

@testable import PinwheelServer

@Suite("The workers' queues")
struct WorkerQueueTests {
    /// The names of the jobs in the order they ran.
    private final class RunLog: Sendable {
        let names = Mutex<[String]>([])
    }

    /// Notes its name in the log when it runs; `hold` keeps its thread until `release` signals.
    private final class Job: WorkerJob {
        let name: String
        let ran: RunLog
        let hold: (started: DispatchSemaphore, release: DispatchSemaphore)?

        init(_ name: String, ran: RunLog, hold: (DispatchSemaphore, DispatchSemaphore)? = nil) {
            self.name = name
            self.ran = ran
            self.hold = hold
        }

        func run(scratch: inout PlanScratch) {
            if let hold {
                hold.started.signal()
                hold.release.wait()
            }
            ran.names.withLock { $0.append(name) }
        }
    }

    /// Runs `arrivals` on one worker thread, queued together while it is busy, and returns the order
    /// they ran in.
    private func runOrder(_ arrivals: [(String, Workers.Priority, ContinuousClock.Instant)]) throws -> [String] {
        let workers = Workers(count: 1, metrics: ServerMetrics())
        defer { workers.stop() }
        let ran = RunLog()
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        // Keeps the one thread busy while the others queue.
        workers.submit(Job("holder", ran: ran, hold: (started, release)), priority: .refresh)
        try #require(started.wait(timeout: .now() + 10) == .success)
        for (name, priority, at) in arrivals {
            workers.submit(Job(name, ran: ran), priority: priority, at: at)
        }
        #expect(workers.waiting == arrivals.count)
        release.signal()

        let deadline = ContinuousClock.now + .seconds(10)
        while ran.names.withLock({ $0.count }) < arrivals.count + 1 && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.005)
        }
        return Array(ran.names.withLock { $0 }.dropFirst())
    }

    @Test(
        "jobs none of which is overdue run requests before acks and timers, and those before refreshes, each in arrival order"
    )
    func priorityOrder() throws {
        // Stamped a minute ahead, so none becomes overdue however long the machine takes to run them.
        let now = ContinuousClock.now + .seconds(60)
        let order = try runOrder([
            ("refresh 1", .refresh, now), ("ack 1", .flow, now), ("viewport 1", .request, now),
            ("refresh 2", .refresh, now), ("viewport 2", .request, now), ("ack 2", .flow, now),
        ])
        #expect(order == ["viewport 1", "viewport 2", "ack 1", "ack 2", "refresh 1", "refresh 2"])
    }

    @Test("children and leaves requests run ahead of viewports queued before them, which still get every other turn")
    func lookupsGoFirst() throws {
        let now = ContinuousClock.now
        let ahead = now + .seconds(60)
        let order = try runOrder([
            ("viewport 1", .request, now), ("viewport 2", .request, now), ("leaves 1", .lookup, ahead),
            ("viewport 3", .request, ahead), ("leaves 2", .lookup, ahead), ("leaves 3", .lookup, ahead),
        ])
        // Viewports 1 and 2 are overdue (their line has no slack) and alternate with lookups; viewport 3,
        // stamped later, waits for every lookup though it was queued before two of them.
        #expect(order == ["viewport 1", "leaves 1", "viewport 2", "leaves 2", "leaves 3", "viewport 3"])
    }

    @Test("refreshes that waited past their slack take every other turn from the viewports until they ran")
    func overdueRefreshesTakeTurns() throws {
        let now = ContinuousClock.now
        let ahead = now + .seconds(60)
        let slack = Workers.Priority.refresh.slack
        let order = try runOrder([
            ("viewport 1", .request, ahead), ("overdue refresh 1", .refresh, now - slack * 2),
            ("viewport 2", .request, ahead), ("overdue refresh 2", .refresh, now - slack - .milliseconds(1)),
            ("viewport 3", .request, ahead), ("refresh not yet due", .refresh, ahead), ("viewport 4", .request, ahead),
        ])
        #expect(
            order == [
                "overdue refresh 1", "viewport 1", "overdue refresh 2", "viewport 2", "viewport 3", "viewport 4",
                "refresh not yet due",
            ])
    }

    @Test("a job waiting long lends its place: a stand-in takes the other jobs meanwhile, then ends")
    func lendingPlace() throws {
        let workers = Workers(count: 1, metrics: ServerMetrics())
        defer { workers.stop() }
        let ran = RunLog()
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        final class Lender: WorkerJob {
            let workers: Workers
            let started: DispatchSemaphore
            let release: DispatchSemaphore
            let ran: RunLog
            init(_ workers: Workers, _ started: DispatchSemaphore, _ release: DispatchSemaphore, _ ran: RunLog) {
                (self.workers, self.started, self.release, self.ran) = (workers, started, release, ran)
            }
            func run(scratch: inout PlanScratch) {
                workers.lendingPlace {
                    started.signal()
                    release.wait()
                }
                ran.names.withLock { $0.append("lender") }
            }
        }
        // The one worker waits inside the lender; without a stand-in nothing else would run.
        workers.submit(Lender(workers, started, release, ran), priority: .request)
        try #require(started.wait(timeout: .now() + 10) == .success)
        #expect(workers.standIns == 1)
        for name in ["a", "b", "c"] { workers.submit(Job(name, ran: ran), priority: .request) }
        let deadline = ContinuousClock.now + .seconds(10)
        while ran.names.withLock({ $0.count }) < 3 && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.005)
        }
        #expect(ran.names.withLock { $0 } == ["a", "b", "c"], "served while the lender waits")
        release.signal()
        // After it, jobs still run (on the worker or the stand-in, whichever is free).
        workers.submit(Job("d", ran: ran), priority: .request)
        while ran.names.withLock({ $0.count }) < 5 && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.005)
        }
        #expect(Set(ran.names.withLock { $0 }.suffix(2)) == ["lender", "d"])
        // Idle and no one lending: the stand-in ends within its second of looking up.
        while workers.standIns > 0 && ContinuousClock.now < deadline + .seconds(5) {
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(workers.standIns == 0)
    }
}
