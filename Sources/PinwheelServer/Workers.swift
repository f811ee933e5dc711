import Dispatch
import Foundation
import Synchronization

/// Something a worker thread runs: a session with events waiting.
protocol WorkerJob: AnyObject, Sendable {
    /// Runs on one worker thread at a time for a given job object.
    func run()
}

/// A fixed set of threads that cluster and diff, fed by one first-in-first-out queue.
///
/// Each session is queued at most once at a time (the session keeps a "scheduled" flag), so a
/// session's events run in order on one thread, and a session with a slow query holds one worker
/// while the others keep serving everyone else. Writes never wait here: workers hand finished
/// messages to the transport's thread-safe `send`.
final class Workers: Sendable {
    private struct Queue {
        var jobs: [any WorkerJob] = []
        var head = 0
        var stopping = false
    }

    private let queue = Mutex(Queue())
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

    /// Queues a job; any thread.
    func submit(_ job: any WorkerJob) {
        let depth = queue.withLock { q -> Int? in
            guard !q.stopping else { return nil }
            q.jobs.append(job)
            return q.jobs.count - q.head
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
                q.jobs.removeAll()
                q.head = 0
            }
            return q.stopping
        }
        guard !alreadyStopping else { return }
        for _ in 0..<count { available.signal() }
        finished.wait()
    }

    private func loop() {
        while true {
            available.wait()
            let next = queue.withLock { q -> (any WorkerJob)?? in
                guard q.head < q.jobs.count else { return q.stopping ? .some(nil) : nil }
                let job = q.jobs[q.head]
                q.head += 1
                // Compact once the consumed prefix dominates, keeping appends amortised O(1).
                if q.head > 1024 && q.head * 2 > q.jobs.count {
                    q.jobs.removeFirst(q.head)
                    q.head = 0
                }
                return .some(job)
            }
            switch next {
            case .some(.some(let job)):
                metrics.workerQueueDepth(queue.withLock { $0.jobs.count - $0.head })
                job.run()
            case .some(.none):
                return
            case .none:
                continue
            }
        }
    }
}
