import Foundation

/// The compaction running on idle cores only (``CompactionPriority/spareCoresOnly``), if one is, and
/// the CPU time such compactions have taken. That time was spare: `SCHED_IDLE` gives way to any other
/// thread at once, so the judgement of the machine's cores counts it as idle (``CoreShortage``).
/// Otherwise a compaction filling the idle cores, as it is meant to, would itself make the machine
/// look short of cores, and the workers would yield to it.
struct IdleCompaction {
    /// The machine's latest judgement (``CoreShortage``).
    var coresShort = false
    /// The compaction's thread while it runs on idle cores only.
    private(set) var thread: pid_t?
    private var clock: clockid_t?
    private var cpuAtStart: Duration = .zero
    /// Ended compactions' CPU time on idle cores.
    private var ended: Duration = .zero

    /// On the compaction's own thread, as it starts on idle cores only.
    mutating func begin() {
        thread = CompactionPriority.currentThread()
        clock = ThreadCPUClock.ofCurrentThread()
        cpuAtStart = ThreadCPUClock.now()
    }

    /// Once the compaction ends or leaves idle cores: its time so far counts, and no more of it.
    /// Called before its thread ends, while its clock can still be read.
    mutating func end() {
        ended = spent
        thread = nil
        clock = nil
    }

    /// The CPU time compactions have taken on idle cores since the server started, the running one's
    /// included.
    var spent: Duration {
        ended + (clock.map { ThreadCPUClock.time(of: $0) - cpuAtStart } ?? .zero)
    }
}
