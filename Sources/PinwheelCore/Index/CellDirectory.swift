/// Where runs of a level's cell keys start, so a search for a run of cells reads only the items
/// near it, not its whole row. Keys (row, then column) are grouped `shift` bits at a time, at most
/// one group per item (a level's grid may have far more cells than items); group g's items are
/// `starts[g] ..< starts[g + 1]`, in cell-key order like the level. On a level with fewer rows than
/// items a group is part of a row, so a search's binary search reads a few items, each a likely
/// cache miss, instead of a whole row's worth.
struct CellDirectory: Sendable {
    let shift: UInt64
    let starts: [Int32]

    /// - Complexity: O(n) over the level's items.
    init(_ level: ZoomLevel) {
        let keyBits = 2 * level.gridBits
        let groupBits = min(keyBits, max(10, Int.bitWidth - 1 - level.count.leadingZeroBitCount))
        let shift = UInt64(keyBits - groupBits)
        var starts = [Int32](repeating: 0, count: (1 << groupBits) + 1)
        level.xy.withUnsafeBufferPointer { xy in
            for i in 0..<level.count {
                starts[Int(GridOrder.key(x: xy[2 * i], y: xy[2 * i + 1], bits: level.gridBits) >> shift) + 1] += 1
            }
        }
        for g in 0..<(1 << groupBits) { starts[g + 1] += starts[g] }
        self.shift = shift
        self.starts = starts
    }

    /// The items of the groups holding keys `first` through `last`: those keys' items and their
    /// groups' others.
    @inline(__always) func items(from first: UInt64, through last: UInt64) -> Range<Int> {
        Int(starts[Int(first >> shift)])..<Int(starts[Int(last >> shift) + 1])
    }

    var storedBytes: Int { starts.count * 4 }
}
