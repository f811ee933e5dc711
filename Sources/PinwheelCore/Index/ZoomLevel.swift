/// One zoom of the cluster hierarchy in flat arrays. Items are ordered by grid cell key (row, then
/// column, on a grid of `2^gridBits` × `2^gridBits` cells), so the clustering sweep and viewport
/// queries both read contiguous runs and find a cell by searching the ordered keys.
struct ZoomLevel: Sendable {
    /// The zoom this level answers.
    let zoom: Int
    /// Bits per axis of the grid the items are ordered on.
    let gridBits: Int
    /// True for the level above `maxZoom`: every item is a raw point or same-coordinate group.
    let isRaw: Bool
    /// Mercator x at 2i, y at 2i+1 (unit square, y south).
    var xy: [Double]
    /// Item i's count, kind and payload in one word (see ``ItemMeta``), so a query reads what it needs
    /// about an item, or about its parent, in one load.
    var meta: [UInt64]
    /// Index of the item containing item i at `zoom - 1`; -1 at the coarsest zoom.
    var parents: [Int32]
    /// Item i's children at `zoom + 1` are `childOrder[firstChild[i] ..< firstChild[i + 1]]`; both
    /// empty on the raw level.
    var firstChild: [UInt32]
    var childOrder: [UInt32]
    /// Reduced aggregate values, `stride` per item (empty without aggregates).
    var reduced: [Double]

    /// Number of items.
    var count: Int { meta.count }

    /// Bytes held by this level's arrays.
    var storedBytes: Int {
        xy.count * 8 + meta.count * 8 + parents.count * 4 + firstChild.count * 4 + childOrder.count * 4
            + reduced.count * 8
    }
}

/// The word describing an item: bits 0..<26 its point count; bits 26..<31 its kind (0 a point,
/// ``groupTag`` a same-coordinate group, 1...25 a cluster made at zoom kind - 1 and kept unchanged at
/// coarser zooms); bits 32..<64 its payload: a point's dataset row, a group's index, or the dataset id
/// of the point whose item seeded a cluster.
enum ItemMeta {
    static let countBits: UInt64 = 26
    static let countMask: UInt64 = (1 << countBits) - 1
    /// The kind of a same-coordinate group.
    static let groupTag: UInt64 = 31

    @inline(__always) static func make(count: UInt32, tag: UInt64, payload: UInt32) -> UInt64 {
        UInt64(count) | tag << countBits | UInt64(payload) << 32
    }

    @inline(__always) static func count(_ meta: UInt64) -> UInt32 { UInt32(meta & countMask) }
    @inline(__always) static func tag(_ meta: UInt64) -> UInt64 { (meta >> countBits) & 31 }
    @inline(__always) static func payload(_ meta: UInt64) -> UInt32 { UInt32(meta >> 32) }
    @inline(__always) static func isCluster(_ meta: UInt64) -> Bool {
        let t = tag(meta)
        return t != 0 && t != groupTag
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
