import Dispatch
import Foundation
import HeapModule
import Synchronization

/// Something an alarm wakes: a session, which then posts itself a `tick`.
protocol AlarmTarget: AnyObject, Sendable {
    /// Called on the alarms' thread when the alarm is due; must not block.
    func alarmRang()
}

/// One thread that wakes sessions at the times their machines asked for (the next paced batch, the
/// end of a coalescing wait): thousands of sessions each want a wake-up every few tens of
/// milliseconds, and a Dispatch timer per wake-up cost a manager thread's timerfd and epoll calls plus
/// a hop through a global queue before the session reached a worker.
///
/// An alarm holds its target until it rings or ``cancel(_:)`` drops it. A weak reference would spare
/// the cancelling, but the first weak reference to an object moves its reference count to a side
/// table for good, and every retain and release of a session, thousands a second, took the slow
/// path through it (docs/performance.md).
final class Alarms: Sendable {
    /// Ordered by deadline alone, as the heap needs.
    private struct Alarm: Comparable {
        var deadline: ContinuousClock.Instant
        var target: any AlarmTarget

        static func < (a: Alarm, b: Alarm) -> Bool { a.deadline < b.deadline }
        static func == (a: Alarm, b: Alarm) -> Bool { a.deadline == b.deadline }
    }

    private struct State {
        var heap = Heap<Alarm>()
        var stopping = false
    }

    private let state = Mutex(State())
    /// Signalled when an alarm earlier than every other arrives, and at stop.
    private let changed = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    init() {
        let thread = Thread { [self] in
            loop()
            finished.signal()
        }
        thread.name = "pinwheel-alarms"
        thread.start()
    }

    /// Rings `target` at `deadline` (at once if it has passed); any thread.
    func wake(_ target: any AlarmTarget, at deadline: ContinuousClock.Instant) {
        let soonest = state.withLock { s -> Bool in
            guard !s.stopping else { return false }
            s.heap.insert(Alarm(deadline: deadline, target: target))
            return s.heap.min?.deadline == deadline
        }
        if soonest { changed.signal() }
    }

    /// Drops every alarm of `target` not yet rung, so a closed session is not kept for it; any
    /// thread. A linear pass over the alarms, once per session.
    func cancel(_ target: any AlarmTarget) {
        state.withLock { s in
            guard s.heap.unordered.contains(where: { $0.target === target }) else { return }
            s.heap = Heap(s.heap.unordered.filter { $0.target !== target })
        }
    }

    /// Ends the thread; the alarms not yet due are dropped. Any thread but the alarms' own.
    func stop() {
        let alreadyStopping = state.withLock { s in
            defer {
                s.stopping = true
                s.heap = Heap()
            }
            return s.stopping
        }
        guard !alreadyStopping else { return }
        changed.signal()
        finished.wait()
    }

    private func loop() {
        var due: [any AlarmTarget] = []
        while true {
            let next = state.withLock { s -> ContinuousClock.Instant?? in
                if s.stopping { return .some(nil) }
                let now = ContinuousClock.now
                while let first = s.heap.min, first.deadline <= now {
                    due.append(s.heap.removeMin().target)
                }
                return s.heap.min.map(\.deadline)
            }
            // Rung outside the lock: a session's tick may schedule it on a worker.
            for target in due { target.alarmRang() }
            due.removeAll(keepingCapacity: true)
            switch next {
            case .some(.none):
                return
            case .some(.some(let deadline)):
                let delay = max(.zero, deadline - .now)
                _ = changed.wait(timeout: .now() + .nanoseconds(Int(delay.nanoseconds)))
            case .none:
                changed.wait()
            }
        }
    }
}
