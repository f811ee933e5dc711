/// The part of a ``PCATree`` node that a viewport cut reads at every visit: its box, its children,
/// its parent, its size and its smallest id. Kept together (48 bytes, one record per node) rather
/// than in one array per field, because a cut is bound by memory latency: reading a child's box to
/// test it against the viewport brings in everything the next level and the final sort need, so a
/// visit costs one cache miss instead of three. The rest of a node (centroid, row range, depth) is
/// read only for the few nodes returned and stays in flat arrays.
struct PCANode: Equatable, Sendable {
    /// West edge, Mercator units.
    var minX: Double
    /// North edge (y grows south).
    var minY: Double
    /// East edge.
    var maxX: Double
    /// South edge.
    var maxY: Double
    /// Index of the first child (the second is next to it), or -1 for a leaf.
    var firstChild: Int32
    /// Index of the parent, or -1 for the root.
    var parent: Int32
    /// Points under the node.
    var size: UInt32
    /// Smallest dataset id under the node, half of its wire id.
    var minID: UInt32

    /// Whether the box meets any of the rectangles (edges included).
    @inline(__always) func meets(_ rects: [MercatorRect]) -> Bool {
        for r in rects where minX <= r.maxX && r.minX <= maxX && minY <= r.maxY && r.minY <= maxY { return true }
        return false
    }

    /// The larger side of the box, Mercator units.
    @inline(__always) var width: Double { max(maxX - minX, maxY - minY) }
}
