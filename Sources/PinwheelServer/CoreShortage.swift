import Foundation

/// Tells whether the machine is short of cores, from its idle share.
///
/// With cores to spare, the workers serve viewers at the process's priority and compactions take
/// only idle cores, so viewers' first batches do not wait behind them. On a machine whose cores are
/// all busy, a refresh that waits for one holds back every viewer's changes and leaves the next
/// refresh more to lay, while a viewport that waits is superseded by the viewer's next: there the
/// workers and compactions yield to the index thread (docs/benchmarks/2026-11-28-who-waits-for-a-core.md). Judged by the whole machine's idle share, which does not move when the workers yield, so
/// the judgement does not flip back and forth.
///
/// Index thread only.
struct CoreShortage {
    /// How often the machine is read: long enough that a burst (a compaction starting while a
    /// refresh's turns run) does not count as a shortage; at one second, runs of the live floor with
    /// the machine 21 % idle on average had windows under 5 %.
    static let window: Duration = .seconds(3)
    /// Idle shares below which the machine is short of cores, and above which it no longer is.
    static let shortBelow = 0.05
    static let enoughAbove = 0.15

    /// Whether the workers should yield now.
    private(set) var isShort = false
    /// Whether the machine has been judged yet: until then no compaction is started on idle cores only,
    /// since one started so on a busy machine would hardly run.
    private(set) var hasJudged = false
    /// The idle share over the last window.
    private(set) var idleShare = 0.0
    private var last: (at: ContinuousClock.Instant, reading: Reading)?

    /// The machine's CPU time since boot, idle and in all, in any unit.
    struct Reading {
        var idle: Double
        var total: Double

        /// The first line of /proc/stat (idle and I/O wait count as idle), and `alsoIdle`: CPU time
        /// that only threads under `SCHED_IDLE` took, which any other thread could have had
        /// (``IdleCompaction``). Nil where /proc/stat is not readable.
        static func now(alsoIdle: Duration = .zero) -> Reading? {
            guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
                let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ")
            else { return nil }
            // user nice system idle iowait irq softirq steal
            let ticks = line.split(separator: " ").dropFirst().prefix(8).compactMap { Double($0) }
            guard ticks.count >= 5 else { return nil }
            let spare = alsoIdle / .seconds(1) * ticksPerSecond
            return Reading(idle: ticks[3] + ticks[4] + spare, total: ticks.reduce(0, +))
        }
    }

    /// /proc/stat's unit.
    private static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// Whether a reading is due.
    func isDue(at now: ContinuousClock.Instant) -> Bool {
        last.map { now - $0.at >= Self.window } ?? true
    }

    /// Judges the idle share since the last reading.
    /// - Returns: the new judgement when it changed.
    mutating func read(_ reading: Reading, at now: ContinuousClock.Instant) -> Bool? {
        defer { last = (now, reading) }
        guard let previous = last?.reading, reading.total > previous.total else { return nil }
        let idle = (reading.idle - previous.idle) / (reading.total - previous.total)
        idleShare = idle
        hasJudged = true
        let before = isShort
        if idle < Self.shortBelow {
            isShort = true
        } else if idle > Self.enoughAbove {
            isShort = false
        }
        return isShort == before ? nil : isShort
    }
}
