/// One page of the points a feature holds, in ascending id order after a cursor id: pages keyed on
/// ids partition the points exactly, and a change between two pages shifts nothing.
public struct MemberPage: Sendable {
    /// The points the feature holds.
    public var total: Int
    /// This page's points, ascending ids.
    public var points: [Feature]
    /// The id the next page starts after; nil after the last page.
    public var next: UInt32?

    /// The page of `members` after id `after` (nil: from the first), `limit` points at most.
    /// - Complexity: O(members + limit · log(members / limit)) on average: most members are compared
    ///   once against the page's largest id so far.
    public init(members: [Feature], after: UInt32?, limit: Int) {
        total = members.count
        let floor = after.map { FeatureID($0) }
        var page: [Feature] = []
        page.reserveCapacity(min(limit, members.count))
        var rest = 0
        for f in members where floor.map({ f.id > $0 }) ?? true {
            if page.count == limit {
                rest += 1
                guard f.id < page[page.count - 1].id else { continue }
                page.removeLast()
            }
            // Kept sorted: a binary search for the place, then one shift.
            var lo = 0
            var hi = page.count
            while lo < hi {
                let mid = (lo + hi) >> 1
                if page[mid].id < f.id { lo = mid + 1 } else { hi = mid }
            }
            page.insert(f, at: lo)
        }
        points = page
        next = rest > 0 ? page.last.map { UInt32(truncatingIfNeeded: $0.id) } : nil
    }
}
