import Logging

/// Makes the workers and compactions yield while the machine is short of cores, and run at the
/// process's priority (compactions on idle cores only) while it has cores to spare, from the
/// judgement of ``CoreShortage``.
///
/// Index thread only: ``IndexPublisher`` asks it after each refresh.
struct CoreGovernor {
    private var shortage = CoreShortage()
    private let workers: Workers
    private let metrics: ServerMetrics
    private let logger: Logger

    init(workers: Workers, metrics: ServerMetrics, logger: Logger) {
        self.workers = workers
        self.metrics = metrics
        self.logger = logger
        metrics.coresShort(false)
    }

    /// The priority a compaction starting now runs at (``CompactionPriority/starting(coresShort:judged:)``).
    var compactionPriority: CompactionPriority {
        .starting(coresShort: shortage.isShort, judged: shortage.hasJudged)
    }

    /// Reads the machine when a reading is due, and makes the workers yield or not by it.
    /// - Parameter alsoIdle: CPU time compactions took on idle cores only, which was the machine's to spare.
    /// - Returns: the new judgement (short of cores or not) when it changed.
    mutating func judge(alsoIdle: () -> Duration) -> Bool? {
        let now = ContinuousClock.now
        guard shortage.isDue(at: now),
            let reading = CoreShortage.Reading.now(alsoIdle: alsoIdle()),
            let short = shortage.read(reading, at: now)
        else { return nil }
        workers.setYielding(short)
        metrics.coresShort(short)
        let idle = "\(Int((shortage.idleShare * 100).rounded())) % idle over \(CoreShortage.window)"
        logger.info(
            short
                ? "the machine is short of cores (\(idle)): the workers and compactions yield to the index thread"
                : "the machine has cores to spare (\(idle)): the workers run at the process's priority, compactions on idle cores"
        )
        return short
    }
}
