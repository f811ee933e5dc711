import Foundation
import Synchronization

/// Notices when this process did not run for a while (SIGSTOP and SIGCONT, a VM paused, a machine
/// starved of CPU), so that requests it held meanwhile are dropped rather than published after their
/// producers gave them up and perhaps sent newer changes elsewhere.
///
/// A thread ticks every 100 ms; a gap of `threshold` or more between ticks is a stall.
final class StallWatch: Sendable {
    private let record: Mutex<StallRecord>

    /// Starts the ticking thread, which ends with this object.
    init(
        threshold: Duration = .seconds(2), grace: Duration = .seconds(1),
        onStall: @escaping @Sendable (Duration) -> Void
    ) {
        record = Mutex(StallRecord(threshold: threshold, grace: grace, now: .now))
        // The thread holds the watch only while it ticks, so the watch can go meanwhile.
        let thread = Thread { [weak self] in
            func step() -> Bool {
                guard let watch = self else { return false }
                if let stall = watch.record.withLock({ $0.tick(at: .now) }) { onStall(stall) }
                return true
            }
            while step() { Thread.sleep(forTimeInterval: 0.1) }
        }
        thread.name = "pinwheel-stall-watch"
        thread.start()
    }

    /// How long the process stalled while holding a request received at `received`, nil when it did not.
    func stall(holding received: ContinuousClock.Instant) -> Duration? {
        record.withLock { $0.stall(holding: received, now: .now) }
    }
}

/// The ticks a ``StallWatch`` saw, and the last stall among them; told the time, so tests drive it.
struct StallRecord {
    /// A gap between ticks this long or longer is a stall.
    let threshold: Duration
    /// Requests received up to this long after a stall ended are still suspect: after SIGCONT the
    /// server reads, in its first moments, requests that reached the kernel while it was stopped.
    let grace: Duration
    private var lastTick: ContinuousClock.Instant
    private var lastStall: (start: ContinuousClock.Instant, end: ContinuousClock.Instant)?

    init(threshold: Duration, grace: Duration, now: ContinuousClock.Instant) {
        self.threshold = threshold
        self.grace = grace
        lastTick = now
    }

    /// Records a tick. - Returns: the gap before it, when that was a stall.
    mutating func tick(at now: ContinuousClock.Instant) -> Duration? {
        defer { lastTick = now }
        guard now - lastTick >= threshold else { return nil }
        lastStall = (lastTick, now)
        return now - lastTick
    }

    /// How long the process stalled while holding a request received at `received`, asked at `now`:
    /// a stall going on (no tick for `threshold`: the ticking thread has not run since the process
    /// resumed) or one that ended less than `grace` before the request was received.
    func stall(holding received: ContinuousClock.Instant, now: ContinuousClock.Instant) -> Duration? {
        if now - lastTick >= threshold { return now - lastTick }
        guard let stall = lastStall, received < stall.end + grace else { return nil }
        return stall.end - stall.start
    }
}
