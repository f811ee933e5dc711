#if canImport(Glibc)
    import Glibc
#endif

/// Decides whether the lws service thread runs a viewer's turn itself, as the message arrives,
/// instead of handing it to a worker: a worker's turn costs two thread hops (waking the worker, then
/// the service thread again for the batch); running it here saves a tenth of the server's CPU per
/// viewport (docs/performance.md).
///
/// It does so only while that holds no one up for long: without live data (whose producers' answers and
/// refreshes go through the same thread), while no job waits for a worker, while the session's last
/// turn was short, and while the thread was busy less than ``busiestShare`` of the last
/// ``window``. Past that, turns go to the workers until the share falls again, so the loop keeps
/// time for everyone's reads and writes, and a heavy load still spreads over every core.
///
/// Service thread only.
struct ServiceThreadTurns {
    /// How often the thread's busy share is measured.
    static let window: Duration = .milliseconds(100)
    /// Busy share of a window above which the next window's turns go to workers. At 60 % the thread
    /// runs nearly every turn of 1,000 viewers × 10 Hz or 10,000 × 1 Hz itself, for 7–13 % less CPU
    /// per viewport than at 30 %: each turn handed to a worker costs two thread wake-ups, and on a
    /// virtual machine a wake-up of an idle core costs as much as a small turn. The price is that
    /// other connections' reads and writes wait behind the turns: on a 2-core AMD EPYC that left the
    /// clients' first batch p99 where it was at 10,000 viewers; on a slower Intel Xeon it doubled it,
    /// to 11–16 ms (docs/performance.md).
    static let busiestShare = 0.6
    /// A session whose last turn took longer has its next one on a worker.
    static let longestTurn: Duration = .microseconds(500)

    private var windowStart: ContinuousClock.Instant?
    private var cpuAtWindowStart: Duration = .zero
    /// The thread's busy share over the last whole window.
    private(set) var busyShare = 0.0

    /// Whether to run a turn here now.
    /// - Parameters:
    ///   - workersWaiting: jobs queued for the workers.
    ///   - lastTurn: how long the session's previous turn took.
    mutating func runsHere(workersWaiting: Int, lastTurn: Duration) -> Bool {
        measure(now: .now, threadCPU: ThreadCPUClock.now)
        return workersWaiting == 0 && lastTurn <= Self.longestTurn && busyShare < Self.busiestShare
    }

    /// Closes the window once it is long enough: the thread's CPU time over the wall time it spanned.
    /// - Parameter threadCPU: reads the thread's CPU time; called only when a window opens or closes.
    mutating func measure(now: ContinuousClock.Instant, threadCPU: () -> Duration) {
        guard let start = windowStart else {
            windowStart = now
            cpuAtWindowStart = threadCPU()
            return
        }
        let wall = now - start
        guard wall >= Self.window else { return }
        let cpu = threadCPU()
        busyShare = (cpu - cpuAtWindowStart) / wall
        windowStart = now
        cpuAtWindowStart = cpu
    }
}
