import Foundation

/// The CPU time the calling thread has used: what a thread's work cost, whatever it waited for a core.
public enum ThreadCPUClock {
    public static func now() -> Duration {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return .seconds(t.tv_sec) + .nanoseconds(t.tv_nsec)
    }
}
