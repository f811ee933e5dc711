import Dispatch
import Foundation
import PinwheelCore
import Synchronization

/// Something a worker thread runs: a session with events waiting.
protocol WorkerJob: AnyObject, Sendable {
    /// Runs on one worker thread at a time for a given job object, with that thread's planning memory.
    func run(scratch: inout PlanScratch)
}

/// A fixed set of threads that cluster and diff, fed by one first-in-first-out queue per ``Priority``.
///
/// A session runs on one worker at a time (it keeps its own "running" flag and may sit in several
/// queues), so its events run in order, and a session with a slow query holds one worker while the
/// others keep serving everyone else. Refreshes after a data change reach hundreds of sessions at
/// once, and the batches they send bring back hundreds of acks; queued in one line with the viewports
/// they would hold each viewer's answer back by all of them.
/// Writes never wait here: workers hand finished messages to the transport's thread-safe `send`.
final class Workers: Sendable {
    private struct Line {
        var jobs: [any WorkerJob] = []
        var head = 0

        var count: Int { jobs.count - head }

        mutating func pop() -> (any WorkerJob)? {
            guard head < jobs.count else { return nil }
            let job = jobs[head]
            head += 1
            // Compact once the consumed prefix dominates, keeping appends amortised O(1).
            if head > 1024 && head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    /// Which queue a job waits in; a thread takes the first job of the most urgent non-empty one.
    enum Priority: Int, Comparable, CaseIterable {
        /// A viewer waits for the answer: a viewport, an expansion, the connection opening.
        case request
        /// Keeps batches flowing: a client's ack, a timer the session asked for.
        case flow
        /// Shows a view anew after the data changed.
        case refresh

        static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }
    }

    private struct Queue {
        var lines = Priority.allCases.map { _ in Line() }
        var stopping = false

        var depth: Int { lines.reduce(0) { $0 + $1.count } }

        mutating func pop() -> (any WorkerJob)? {
            for index in lines.indices {
                if let job = lines[index].pop() { return job }
            }
            return nil
        }
    }

    private let queue = Mutex(Queue())
    /// Whether the threads run at ``yieldingNiceness`` above the process's nice value (see
    /// ``CoreShortage``); each thread applies it to itself before its next job.
    private let yielding = Atomic(false)
    /// Counts queued jobs plus one wake-up per thread at stop.
    private let available = DispatchSemaphore(value: 0)
    private let finished = DispatchGroup()
    private let metrics: ServerMetrics
    private let count: Int

    /// Starts `count` worker threads.
    init(count: Int, metrics: ServerMetrics) {
        self.count = max(1, count)
        self.metrics = metrics
        for index in 0..<self.count {
            finished.enter()
            let thread = Thread { [self] in
                loop()
                finished.leave()
            }
            thread.name = "pinwheel-worker-\(index)"
            thread.start()
        }
    }

    /// Added to the threads' nice value while they yield: at 5 a thread gets about a third of the share
    /// of one at 0 when both wait for a core, so the index thread goes first.
    static let yieldingNiceness: Int32 = 5

    /// Makes the threads yield the cores to the server's other threads, or stop yielding; any thread.
    /// Linux lets a thread lower its nice value again only with the privilege to (root, or
    /// `RLIMIT_NICE`); without, the threads keep yielding once they have.
    func setYielding(_ on: Bool) {
        yielding.store(on, ordering: .relaxed)
        for _ in 0..<count { available.signal() }
    }

    /// Jobs queued and not yet taken by a thread; any thread.
    var waiting: Int { queue.withLock { $0.depth } }

    /// Queues a job behind those of its priority and ahead of every less urgent one; any thread.
    func submit(_ job: any WorkerJob, priority: Priority) {
        let depth = queue.withLock { q -> Int? in
            guard !q.stopping else { return nil }
            q.lines[priority.rawValue].jobs.append(job)
            return q.depth
        }
        guard let depth else { return }
        metrics.workerQueueDepth(depth)
        available.signal()
    }

    /// Drops the queued jobs (their sessions are closing), lets the threads finish the ones they are
    /// running, then ends them; any thread but a worker.
    func stop() {
        let alreadyStopping = queue.withLock { q in
            defer {
                q.stopping = true
                q.lines = Priority.allCases.map { _ in Line() }
            }
            return q.stopping
        }
        guard !alreadyStopping else { return }
        for _ in 0..<count { available.signal() }
        finished.wait()
    }

    private func loop() {
        // Planning memory for every session this thread runs, rather than one kept by each session.
        var scratch = PlanScratch()
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        // `who` 0 is the calling thread on Linux.
        let ownNiceness = getpriority(which, 0)
        var yields = false
        while true {
            available.wait()
            if yielding.load(ordering: .relaxed) != yields {
                yields.toggle()
                _ = setpriority(which, 0, min(19, ownNiceness + (yields ? Self.yieldingNiceness : 0)))
            }
            let next = queue.withLock { q -> (any WorkerJob)?? in
                if let job = q.pop() { return .some(job) }
                return q.stopping ? .some(nil) : nil
            }
            switch next {
            case .some(.some(let job)):
                metrics.workerQueueDepth(queue.withLock { $0.depth })
                job.run(scratch: &scratch)
            case .some(.none):
                return
            case .none:
                continue
            }
        }
    }
}
