import Synchronization

/// When each of a producer's requests was acknowledged, by the versions it holds, so a viewer
/// receiving a batch of version v can tell how long ago the change v was acknowledged. Requests in
/// flight together may be answered out of version order.
final class AckLog: Sendable {
    /// One answer: the versions it covers and when it came.
    struct Entry: Codable, Equatable {
        var first: UInt64
        var last: UInt64
        var at: ContinuousClock.Instant
    }

    private let entries: Mutex<[Entry]>

    /// - Parameter entries: answers recorded elsewhere (by another process of the tool), in version order.
    init(entries: [Entry] = []) {
        self.entries = Mutex(entries)
    }

    /// The answers so far, in version order.
    var recorded: [Entry] { entries.withLock { $0 } }

    /// Records an answer covering versions `first ... last`.
    func record(first: UInt64, last: UInt64, at: ContinuousClock.Instant) {
        guard last >= first else { return }
        entries.withLock { list in
            // Kept in version order: answers mostly come in order, so the search is short.
            var k = list.count
            while k > 0 && list[k - 1].first > first { k -= 1 }
            list.insert(Entry(first: first, last: last, at: at), at: k)
        }
    }

    /// Changes acknowledged so far.
    var count: UInt64 { entries.withLock { $0.reduce(0) { $0 + $1.last - $1.first + 1 } } }

    /// How long before `now` version `v` was acknowledged: nil for versions older than the producer's
    /// first, zero for versions the producer has not heard back about yet (the viewer was faster),
    /// past its last answer or in a request still in flight.
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
            guard list[lo].first <= v else { return .zero }
            return max(.zero, list[lo].at.duration(to: now))
        }
    }
}
