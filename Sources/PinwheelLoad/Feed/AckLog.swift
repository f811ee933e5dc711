import Synchronization

/// When each of a producer's requests was sent, by the versions its answer says it holds, so a viewer
/// receiving a batch of version v can tell how long ago the change v left the producer. Requests in
/// flight together may be answered out of version order.
final class AckLog: Sendable {
    /// One answer: the versions it covers and when its request was sent (just before).
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

    /// How long before `now` the request holding version `v` was sent: nil for versions older than
    /// the producer's first, zero for versions the producer has not heard back about yet, past its last
    /// answer or in a request still in flight.
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

    /// The ages at `now` of the producer's changes with versions after `from` through `through`, each
    /// the time since its own request was sent, as (age, changes of that age); versions of no answer
    /// (another producer's, or not yet answered) are left out.
    func ages(after from: UInt64, through: UInt64, at now: ContinuousClock.Instant) -> [(Duration, UInt64)] {
        entries.withLock { list -> [(Duration, UInt64)] in
            guard through > from else { return [] }
            // The first answer whose versions reach past `from`.
            var lo = 0
            var hi = list.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if list[mid].last > from { hi = mid } else { lo = mid + 1 }
            }
            var ages: [(Duration, UInt64)] = []
            var k = lo
            while k < list.count && list[k].first <= through {
                let overlap = min(list[k].last, through) - max(list[k].first, from + 1) + 1
                ages.append((max(.zero, list[k].at.duration(to: now)), overlap))
                k += 1
            }
            return ages
        }
    }
}
