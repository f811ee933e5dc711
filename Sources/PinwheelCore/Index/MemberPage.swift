/// One page of the points a feature holds, in ascending id order after a cursor id: pages keyed on
/// ids partition the points exactly, and a change between two pages shifts nothing.
public struct MemberPage: Sendable {
    /// The points the feature holds.
    public var total: Int
    /// This page's points, ascending ids.
    public var points: [Feature]
    /// The id the next page starts after; nil after the last page.
    public var next: UInt32?

    public init(total: Int, points: [Feature], next: UInt32?) {
        self.total = total
        self.points = points
        self.next = next
    }

    /// The page of `members` after id `after` (nil: from the first), `limit` points at most.
    public init(members: [Feature], after: UInt32?, limit: Int) {
        var selector = Selector(after: after, limit: limit)
        for (k, f) in members.enumerated() { selector.offer(id: UInt32(truncatingIfNeeded: f.id), tag: UInt32(k)) }
        self.init(total: members.count, points: selector.page.map { members[Int($0.tag)] }, next: selector.next)
    }

    /// Keeps the `limit` smallest ids above `after` of those offered, each with a tag of the caller's
    /// (a row, an index), so a page is chosen from ids alone and only its points are made.
    /// - Complexity: O(offered + limit · log(offered / limit)) on average: most ids are compared once
    ///   against the page's largest so far.
    public struct Selector {
        let after: UInt32?
        let limit: Int
        /// The page so far, ascending ids.
        public private(set) var page: [(id: UInt32, tag: UInt32)] = []
        /// How many ids above `after` did not make the page.
        private var rest = 0

        public init(after: UInt32?, limit: Int) {
            self.after = after
            self.limit = limit
            page.reserveCapacity(limit)
        }

        @inline(__always)
        public mutating func offer(id: UInt32, tag: UInt32) {
            if let after, id <= after { return }
            if page.count == limit {
                rest += 1
                guard id < page[page.count - 1].id else { return }
                page.removeLast()
            }
            // Kept sorted: a binary search for the place, then one shift.
            var lo = 0
            var hi = page.count
            while lo < hi {
                let mid = (lo + hi) >> 1
                if page[mid].id < id { lo = mid + 1 } else { hi = mid }
            }
            page.insert((id, tag), at: lo)
        }

        /// Offers the ids at positions `run` of `ids`, each tagged 0: the common case, a run of ids
        /// most of which are compared once against the page's largest and go no further.
        public mutating func offer(_ ids: [UInt32], run: Range<Int>) {
            // Every id above `after`: as a wider number, so "no cursor" needs no test per id.
            let floor = after.map(Int64.init) ?? -1
            ids.withUnsafeBufferPointer { ids in
                var p = run.lowerBound
                // Until the page is full, every id above the floor goes in.
                while p < run.upperBound && page.count < limit {
                    if Int64(ids[p]) > floor { offer(id: ids[p], tag: 0) }
                    p += 1
                }
                guard p < run.upperBound, var largest = page.last?.id else { return }
                while p < run.upperBound {
                    let id = ids[p]
                    p += 1
                    guard Int64(id) > floor else { continue }
                    rest += 1
                    guard id < largest else { continue }
                    // `offer` counts it again as it pushes the largest out.
                    rest -= 1
                    offer(id: id, tag: 0)
                    largest = page[page.count - 1].id
                }
            }
        }

        /// The id the next page starts after; nil when this page holds the last id.
        public var next: UInt32? { rest > 0 ? page.last?.id : nil }
    }
}
