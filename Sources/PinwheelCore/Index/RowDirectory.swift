/// Where a level's grid rows start, so a search for a cell reads one row's items, not the whole
/// level's. Rows are grouped `shift` bits at a time, at most about one group per item (a level's grid
/// may have far more rows than items): `starts[g] ..< starts[g + 1]` are the items of group g, in
/// cell-key order like the level.
struct RowDirectory: Sendable {
    let shift: Int
    let starts: [Int32]

    /// - Complexity: O(n) over the level's items.
    init(_ level: ZoomLevel) {
        let side = 1 << level.gridBits
        let groupBits = min(level.gridBits, max(10, Int.bitWidth - level.count.leadingZeroBitCount))
        let shift = level.gridBits - groupBits
        var starts = [Int32](repeating: 0, count: (1 << groupBits) + 1)
        level.xy.withUnsafeBufferPointer { xy in
            for i in 0..<level.count {
                starts[(min(Int(xy[2 * i + 1] * Double(side)), side - 1) >> shift) + 1] += 1
            }
        }
        for g in 0..<(1 << groupBits) { starts[g + 1] += starts[g] }
        self.shift = shift
        self.starts = starts
    }

    /// The items of the group holding grid row `row`: that row's items and its group's others.
    @inline(__always) func items(ofRow row: Int) -> Range<Int> {
        Int(starts[row >> shift])..<Int(starts[(row >> shift) + 1])
    }

    var storedBytes: Int { starts.count * 4 }
}
