import Dispatch
import Foundation
import PinwheelCore
import Synchronization

/// Something a worker thread runs: a session with events waiting.
protocol WorkerJob: AnyObject, Sendable {
    /// Runs on one worker thread at a time for a given job object, with that thread's planning memory.
    func run(scratch: inout PlanScratch)
}

/// A fixed set of threads that cluster and diff, fed by one first-in-first-out line per ``Priority``:
/// the most urgent first, except that a job that has waited its priority's ``Priority/slack`` gets
/// every other job taken until it runs (``AgingLines``).
///
/// A session runs on one worker at a time (it keeps its own "running" flag and may sit in several
/// queues), so its events run in order, and a session with a slow query holds one worker while the
/// others keep serving everyone else. Refreshes after a data change reach hundreds of sessions at
/// once, and the batches they send bring back hundreds of acks; queued in one line with the viewports
/// they would hold each viewer's answer back by all of them. Strict priority, though, would let a
/// steady stream of viewports hold a still viewer's refresh back for ever; here a refresh waits at most
/// its slack, then two turns for itself and for each overdue job ahead of it, whatever the viewports.
/// Writes never wait here: workers hand finished messages to the transport's thread-safe `send`.
///
/// A job that must wait long on its thread (a filtered view's index built for it, or built for
/// another session meanwhile) runs that part inside ``lendingPlace(_:)``: a stand-in thread takes
/// jobs until it is done, so the sessions with an answer at hand do not wait for it.
final class Workers: Sendable {
    /// Which line a job waits in; a thread takes the first job of the most urgent line that has any,
    /// or every other time an overdue one.
    enum Priority: Int, Comparable, CaseIterable {
        /// A viewer waits for a small answer: a cluster's children or a page of its points, read
        /// from the index in microseconds and rate-limited per session; behind viewports it would
        /// wait for all of theirs.
        case lookup
        /// A viewer waits for the answer: a viewport, an expansion, the connection opening.
        case request
        /// Keeps batches flowing: a client's ack, a timer the session asked for.
        case flow
        /// Shows a view anew after the data changed.
        case refresh

        static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }

        /// How long a job waits behind more urgent lines before it is overdue. A viewer's request waits
        /// for nothing; an ack's batch is paced anyway, so a few milliseconds behind viewports cost its
        /// viewer little; a refresh comes at most every refresh interval (100 ms by default), and half
        /// of one more is the most it waits for viewports before it gets every other turn.
        var slack: Duration {
            switch self {
            case .lookup, .request: .zero
            case .flow: .milliseconds(10)
            case .refresh: .milliseconds(50)
            }
        }
    }

    private struct Queue {
        var lines = AgingLines<any WorkerJob, ContinuousClock.Instant>(slacks: Priority.allCases.map(\.slack))
        var stopping = false

        var depth: Int { lines.count }
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
    /// Threads lending their place (inside ``lendingPlace(_:)``), and stand-ins taking jobs meanwhile.
    private let lent = Mutex((lending: 0, standIns: 0))

    /// Starts `count` worker threads.
    init(count: Int, metrics: ServerMetrics) {
        self.count = max(1, count)
        self.metrics = metrics
        for index in 0..<self.count { startThread(name: "pinwheel-worker-\(index)", standIn: false) }
    }

    private func startThread(name: String, standIn: Bool) {
        finished.enter()
        let thread = Thread { [self] in
            loop(standIn: standIn)
            finished.leave()
        }
        thread.name = name
        thread.start()
    }

    /// Runs `body`, which waits long on the calling worker thread, with a stand-in thread taking jobs
    /// meanwhile; once `body` returned the stand-in ends after its next job (an idle one stays, and
    /// serves the next lender). Any thread.
    func lendingPlace<T>(_ body: () throws -> T) rethrows -> T {
        let standIn = lent.withLock { l -> Int? in
            l.lending += 1
            guard l.standIns < l.lending else { return nil }
            l.standIns += 1
            return l.standIns
        }
        if let standIn { startThread(name: "pinwheel-worker-stand-in-\(standIn)", standIn: true) }
        defer { lent.withLock { $0.lending -= 1 } }
        return try body()
    }

    /// Stand-in threads running now.
    var standIns: Int { lent.withLock { $0.standIns } }

    /// Whether a stand-in is one too many now, in which case it ends (counted out here).
    private func standInEnds() -> Bool {
        lent.withLock { l in
            guard l.standIns > l.lending else { return false }
            l.standIns -= 1
            return true
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

    /// Queues a job behind those of its priority; it is overdue its priority's slack from `at`; any
    /// thread.
    /// - Parameter at: when it arrived (now, but for tests that order arrivals exactly).
    func submit(_ job: any WorkerJob, priority: Priority, at: ContinuousClock.Instant = .now) {
        let depth = queue.withLock { q -> Int? in
            guard !q.stopping else { return nil }
            q.lines.push(job, line: priority.rawValue, at: at)
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
                q.lines.removeAll()
            }
            return q.stopping
        }
        guard !alreadyStopping else { return }
        for _ in 0..<count + lent.withLock({ $0.standIns }) { available.signal() }
        finished.wait()
    }

    private func loop(standIn: Bool) {
        // Planning memory for every session this thread runs, rather than one kept by each session.
        var scratch = PlanScratch()
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        // `who` 0 is the calling thread on Linux.
        let ownNiceness = getpriority(which, 0)
        var yields = false
        while true {
            // A stand-in looks up at least every second: to end once no one lends, or the workers stop.
            if standIn, available.wait(timeout: .now() + .seconds(1)) == .timedOut {
                if standInEnds() || queue.withLock({ $0.stopping }) { return }
                continue
            } else if !standIn {
                available.wait()
            }
            if yielding.load(ordering: .relaxed) != yields {
                yields.toggle()
                _ = setpriority(which, 0, min(19, ownNiceness + (yields ? Self.yieldingNiceness : 0)))
            }
            let next = queue.withLock { q -> (any WorkerJob)?? in
                if let job = q.lines.pop(at: .now) { return .some(job) }
                return q.stopping ? .some(nil) : nil
            }
            switch next {
            case .some(.some(let job)):
                metrics.workerQueueDepth(queue.withLock { $0.depth })
                job.run(scratch: &scratch)
            case .some(.none):
                return
            case .none:
                break
            }
            if standIn && standInEnds() { return }
        }
    }
}
