import Synchronization

/// When each of a producer's requests was acknowledged, by the last version it holds, so a viewer
/// receiving a batch of version v can tell how long ago the change v was acknowledged.
final class AckLog: Sendable {
    private struct Entry {
        var first: UInt64
        var last: UInt64
        var at: ContinuousClock.Instant
    }

    private let entries = Mutex<[Entry]>([])

    /// Records an answer covering versions `first ... last` (in version order: one producer).
    func record(first: UInt64, last: UInt64, at: ContinuousClock.Instant) {
        guard last >= first else { return }
        entries.withLock { $0.append(Entry(first: first, last: last, at: at)) }
    }

    /// Changes acknowledged so far.
    var count: UInt64 { entries.withLock { $0.reduce(0) { $0 + $1.last - $1.first + 1 } } }

    /// How long before `now` version `v` was acknowledged: nil for versions older than the producer's
    /// first, zero for versions the producer has not heard back about yet (the viewer was faster).
    func age(of v: UInt64, at now: ContinuousClock.Instant) -> Duration? {
        entries.withLock { list -> Duration? in
            guard let head = list.first, v >= head.first else { return nil }
            guard let tail = list.last, v <= tail.last else { return .zero }
            var lo = 0
            var hi = list.count - 1
            while lo < hi {
                let mid = (lo + hi) / 2
                if list[mid].last >= v { hi = mid } else { lo = mid + 1 }
            }
            return max(.zero, list[lo].at.duration(to: now))
        }
    }
}
