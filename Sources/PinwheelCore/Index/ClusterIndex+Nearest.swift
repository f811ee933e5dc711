/// Lookups a live index needs of its base: the cluster nearest a spot at a level, and an item's
/// position, parent and word.
extension ClusterIndex {
    /// The cluster item of level `li` nearest to (x, y) within `reach` times the radius its zoom
    /// clusters with.
    /// - Parameters:
    ///   - reach: how far to look, in radii.
    ///   - accepts: whether a candidate item, of the given count, may take the spot (a live index
    ///     refuses clusters emptied by changes).
    /// - Returns: the item's index, nil when no cluster is that near.
    /// - Complexity: O(r · log g + k) for the r grid rows the radius reaches, cell-directory groups
    ///   of g items, and the k items in the cells it reaches.
    func nearestCluster(level li: Int, x: Double, y: Double, reach: Double, accepts: (Int, Int) -> Bool) -> Int? {
        guard levels[li].count > 0 else { return nil }
        let r = options.radius(atZoom: levels[li].zoom) * reach
        var best: Int?
        var bestDistance = r * r
        withView(level: li) { level in
            let (rows, columns) = level.cells(of: MercatorRect(minX: x - r, minY: y - r, maxX: x + r, maxY: y + r))
            for row in rows {
                level.forEachItem(row: row, columns: columns) { i in
                    let dx = level.xy[2 * i] - x
                    let dy = level.xy[2 * i + 1] - y
                    let d = dx * dx + dy * dy
                    if d <= bestDistance && ItemMeta.isCluster(level.meta[i])
                        && accepts(i, Int(ItemMeta.count(level.meta[i])))
                        && (d < bestDistance || best == nil || i < best!)
                    {
                        best = i
                        bestDistance = d
                    }
                }
            }
        }
        return best
    }

    // Item lookups that read one field of a level in place (`levels[li]` would copy the level, with a
    // retain of each of its arrays).

    /// Item i's mercator position at level li.
    func position(level li: Int, item i: Int) -> (x: Double, y: Double) {
        levels.withUnsafeBufferPointer { ($0[li].xy[2 * i], $0[li].xy[2 * i + 1]) }
    }

    /// The item holding item i of level li at level li - 1.
    func parent(level li: Int, item i: Int) -> Int {
        levels.withUnsafeBufferPointer { Int($0[li].parents[i]) }
    }

    /// Item i's ``ItemMeta`` at level li.
    func meta(level li: Int, item i: Int) -> UInt64 {
        levels.withUnsafeBufferPointer { $0[li].meta[i] }
    }
}
