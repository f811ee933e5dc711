import Synchronization

/// What a change costs after its producer's thread is done with it: applying it to the table on the
/// log's thread and laying it over the index on the index thread, in CPU time per change, averaged
/// over the latest batches. Producers are charged it with each batch (``IngestSharing``). Any thread.
final class IngestCost: Sendable {
    /// Where a change's cost is measured.
    enum Stage: Int {
        /// Applied to the table, as the log commits it.
        case table
        /// Laid over the index by a refresh.
        case index
    }

    /// Nanoseconds per change at each stage, a moving average.
    private let perChange = Mutex<[Double]>([0, 0])

    /// Takes in what `changes` changes cost at a stage.
    func record(_ stage: Stage, cpu: Duration, changes: Int) {
        guard changes > 0 else { return }
        let sample = Double(cpu.nanoseconds) / Double(changes)
        perChange.withLock { costs in
            // A fifth of each new batch: follows a growing delta within a few refreshes.
            costs[stage.rawValue] = costs[stage.rawValue] == 0 ? sample : 0.8 * costs[stage.rawValue] + 0.2 * sample
        }
    }

    /// CPU time per change after the producer's thread, all stages together.
    var perChangeAfterProducer: Duration {
        .nanoseconds(Int64(perChange.withLock { $0.reduce(0, +) }))
    }
}
