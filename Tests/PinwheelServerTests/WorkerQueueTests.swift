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

    @Test("a thread takes requests before acks and timers, and those before refreshes, each in arrival order")
    func priorityOrder() throws {
        let workers = Workers(count: 1, metrics: ServerMetrics())
        defer { workers.stop() }
        let ran = RunLog()
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        // Keeps the one thread busy while the others queue.
        workers.submit(Job("holder", ran: ran, hold: (started, release)), priority: .refresh)
        try #require(started.wait(timeout: .now() + 10) == .success)
        let arrivals: [(String, Workers.Priority)] = [
            ("refresh 1", .refresh), ("ack 1", .flow), ("viewport 1", .request),
            ("refresh 2", .refresh), ("viewport 2", .request), ("ack 2", .flow),
        ]
        for (name, priority) in arrivals {
            workers.submit(Job(name, ran: ran), priority: priority)
        }
        #expect(workers.waiting == arrivals.count)
        release.signal()

        let deadline = ContinuousClock.now + .seconds(10)
        while ran.names.withLock({ $0.count }) < arrivals.count + 1 && ContinuousClock.now < deadline {
            Thread.sleep(forTimeInterval: 0.005)
        }
        let order = ["holder", "viewport 1", "viewport 2", "ack 1", "ack 2", "refresh 1", "refresh 2"]
        #expect(ran.names.withLock { $0 } == order)
    }
}
