/// One zoom of the cluster hierarchy in flat arrays. Items are ordered by grid cell key (row, then
/// column, on a grid of `2^gridBits` × `2^gridBits` cells), so the clustering sweep and viewport
/// queries both read contiguous runs and find a cell by searching the ordered keys.
struct ZoomLevel: Sendable {
    /// Bits of ``refs`` holding the origin raw item; the bits above hold the cluster's zoom + 1.
    static let originBits: UInt32 = 27
    static let originMask: UInt32 = (1 << originBits) - 1

    /// The zoom this level answers.
    let zoom: Int
    /// Bits per axis of the grid the items are ordered on.
    let gridBits: Int
    /// True for the level above `maxZoom`: every item is a raw point or same-coordinate group.
    let isRaw: Bool
    /// Mercator x at 2i, y at 2i+1 (unit square, y south).
    var xy: [Double]
    /// Points item i stands for.
    var counts: [UInt32]
    /// Item i's identity; empty on the raw level, where item i is raw item i. Bits 0..<27: the raw
    /// item it is, or for a cluster the raw item that seeded it; bits 27...31: for a cluster, the zoom
    /// that created it + 1 (a cluster passed unchanged to coarser zooms keeps it), else 0.
    var refs: [UInt32]
    /// Index of the item containing item i at `zoom - 1`; -1 at the coarsest zoom.
    var parents: [Int32]
    /// Item i's children at `zoom + 1` are `childOrder[firstChild[i] ..< firstChild[i + 1]]`; both
    /// empty on the raw level.
    var firstChild: [UInt32]
    var childOrder: [UInt32]
    /// Aggregated sums of the chosen columns, `stride` values per item (empty without sum columns).
    var sums: [Double]

    /// Number of items.
    var count: Int { counts.count }

    /// Identity bits of item i (see ``refs``).
    @inline(__always) func ref(_ i: Int) -> UInt32 {
        isRaw ? UInt32(i) : refs[i]
    }

    /// Bytes held by this level's arrays.
    var storedBytes: Int {
        xy.count * 8 + counts.count * 4 + refs.count * 4 + parents.count * 4 + firstChild.count * 4
            + childOrder.count * 4 + sums.count * 8
    }
}

/// The grid items are ordered on: row-major by cell.
enum GridOrder {
    /// The grid cell key of a point: row in the high bits, column in the low `bits` bits.
    @inline(__always) static func key(x: Double, y: Double, bits: Int) -> UInt64 {
        let side = 1 << bits
        let scale = Double(side)
        let cx = UInt64(min(Int(x * scale), side - 1))
        let cy = UInt64(min(Int(y * scale), side - 1))
        return cy << UInt64(bits) | cx
    }
}
