import Foundation
import PinwheelCore
import Synchronization

/// Ingest's part of the CPU while viewers are connected (``IngestShare``): each producer's batch
/// waits for its part, and is charged what it cost — the producer thread's own CPU time, plus the
/// table and index work its changes cause later (``IngestCost``). Also counts each producer's
/// accepted changes a second, which its answers report. Any thread.
final class IngestSharing: Sendable {
    /// A wait longer than this is answered 429 on HTTP (with Retry-After) rather than held.
    static let longestHeldRequest: Duration = .seconds(1)

    let cost: IngestCost
    private let share: Mutex<IngestShare<ContinuousClock>>
    /// Whether any viewer is connected now (``watch(_:)``).
    private let viewers = Mutex<@Sendable () -> Bool>({ false })
    private let metrics: ServerMetrics
    /// Per producer, and for all of them (key ""): the current second's start and count, and the
    /// rate of the last whole second.
    private let rates = Mutex<[String: (since: ContinuousClock.Instant, count: Int, rate: Double)]>([:])

    /// - Parameters:
    ///   - share: fraction of one core.
    ///   - cost: what changes cost after the producer's thread.
    init(share: Double, cost: IngestCost, metrics: ServerMetrics) {
        self.share = Mutex(IngestShare(clock: ContinuousClock(), share: share))
        self.cost = cost
        self.metrics = metrics
    }

    /// Sets how to tell whether any viewer is connected; until then none is.
    func watch(_ viewers: @escaping @Sendable () -> Bool) {
        self.viewers.withLock { $0 = viewers }
    }

    /// Holds the calling thread until `producer` may go on, or returns how long it would have to wait
    /// when that is longer than `longest`.
    func admit(producer: String, longest: Duration? = nil) -> Duration? {
        while true {
            let viewing = viewers.withLock { $0 }()
            guard let wait = share.withLock({ $0.wait(producer: producer, viewers: viewing) }) else { return nil }
            if let longest, wait > longest { return wait }
            metrics.ingestHeld(wait)
            Thread.sleep(forTimeInterval: Double(wait.nanoseconds) / 1e9)
        }
    }

    /// Charges `producer` for a batch: `own`, the CPU its thread spent, and `changes` times the later
    /// stages' cost per change.
    func charge(producer: String, own: Duration, changes: Int) {
        let later = cost.perChangeAfterProducer * changes
        share.withLock { $0.charge(producer: producer, own + later) }
    }

    /// Counts accepted changes; the producer's accepted changes per second (over the last whole
    /// second, or the current one so far in its first).
    func accepted(_ count: Int, producer: String) -> Double {
        let now = ContinuousClock.now
        let (mine, all) = rates.withLock { table in
            func add(_ key: String) -> Double {
                var r = table[key] ?? (now, 0, 0)
                let elapsed = r.since.duration(to: now)
                if elapsed >= .seconds(1) {
                    r = (now, 0, Double(r.count) / (Double(elapsed.nanoseconds) / 1e9))
                }
                r.count += count
                table[key] = r
                if r.rate > 0 { return r.rate }
                return Double(r.count) / max(0.1, Double(r.since.duration(to: now).nanoseconds) / 1e9)
            }
            if table.count > 1024 {
                table = table.filter { now - $0.value.since < .seconds(10) }
            }
            return (add(producer), add(""))
        }
        metrics.ingestAcceptedRate(all)
        return mine
    }
}
