import Foundation

/// The CPU time a thread has used: what its work cost, whatever it waited for a core.
public enum ThreadCPUClock {
    /// The calling thread's.
    public static func now() -> Duration { time(of: CLOCK_THREAD_CPUTIME_ID) }

    /// The calling thread's clock, which other threads may read (``time(of:)``) while it lives.
    static func ofCurrentThread() -> clockid_t? {
        var clock = clockid_t()
        return pthread_getcpuclockid(pthread_self(), &clock) == 0 ? clock : nil
    }

    static func time(of clock: clockid_t) -> Duration {
        var t = timespec()
        clock_gettime(clock, &t)
        return .seconds(t.tv_sec) + .nanoseconds(t.tv_nsec)
    }
}
