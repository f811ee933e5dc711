/// The versions of the latest changes dropped because their observation time was older than the
/// newest one the points held, so that the answer to the request that carried them can say how many
/// were; and how many there were since start, for `/metrics`.
///
/// The log thread records a version before the request that brought it is answered; the latest
/// ``kept`` are remembered, far more than a request's answer can lag behind.
struct StaleVersions {
    static let kept = 65_536
    /// Changes dropped as stale since start (in this process, replays included).
    private(set) var total = 0
    /// Ascending, from `head` on.
    private var versions: [UInt64] = []
    private var head = 0

    /// A change applied as `version` was dropped as stale; versions come in ascending order.
    mutating func record(_ version: UInt64) {
        total += 1
        versions.append(version)
        if versions.count - head > Self.kept { head += 1 }
        if head >= Self.kept {
            versions.removeFirst(head)
            head = 0
        }
    }

    /// How many of the changes with versions in `range` were dropped as stale.
    func count(in range: ClosedRange<UInt64>) -> Int {
        firstIndex(atLeast: range.upperBound + 1) - firstIndex(atLeast: range.lowerBound)
    }

    private func firstIndex(atLeast version: UInt64) -> Int {
        var low = head
        var high = versions.count
        while low < high {
            let mid = (low + high) / 2
            if versions[mid] < version { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
