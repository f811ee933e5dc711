import Synchronization

/// Counts viewports answered, and those whose first batch took longer than a threshold, between two
/// refreshes of a live index (``RefreshPacing``). Sessions record from any thread; the index thread
/// takes the counts.
final class FirstBatchTally: Sendable {
    let slowerThan: Duration
    private let answered = Atomic<Int>(0)
    private let slow = Atomic<Int>(0)

    init(slowerThan: Duration) {
        self.slowerThan = slowerThan
    }

    func record(_ latency: Duration) {
        answered.add(1, ordering: .relaxed)
        if latency > slowerThan { slow.add(1, ordering: .relaxed) }
    }

    /// The counts since the last call, which start again from zero.
    func take() -> (answered: Int, slow: Int) {
        (answered.exchange(0, ordering: .relaxed), slow.exchange(0, ordering: .relaxed))
    }
}
