/// Lookups a live index needs of its base: the cluster nearest a spot at a level, and the items
/// holding a point.
extension ClusterIndex {
    /// The cluster item of level `li` nearest to (x, y) within the radius its zoom clusters with.
    /// - Parameters:
    ///   - rows: the level's row directory.
    ///   - accepts: whether a candidate item may take the spot (a live index refuses clusters emptied
    ///     by changes).
    /// - Returns: the item's index, nil when no cluster is that near.
    /// - Complexity: O(log r + k) for rows of r items and the k items in the cells the radius reaches.
    func nearestCluster(level li: Int, x: Double, y: Double, rows: RowDirectory, accepts: (Int) -> Bool) -> Int? {
        let level = levels[li]
        guard level.count > 0 else { return nil }
        let r = options.radius(atZoom: level.zoom)
        let bits = level.gridBits
        let side = 1 << bits
        let scale = Double(side)
        func cell(_ v: Double) -> Int { max(0, min(Int(v * scale), side - 1)) }
        var best: Int?
        var bestDistance = r * r
        level.xy.withUnsafeBufferPointer { xy in
            level.meta.withUnsafeBufferPointer { meta in
                @inline(__always) func key(_ i: Int) -> UInt64 {
                    GridOrder.key(x: xy[2 * i], y: xy[2 * i + 1], bits: bits)
                }
                for row in cell(y - r)...cell(y + r) {
                    let last = UInt64(row) << UInt64(bits) | UInt64(cell(x + r))
                    let candidates = rows.items(ofRow: row)
                    var lo = candidates.lowerBound
                    var hi = candidates.upperBound
                    let rowEnd = hi
                    let first = UInt64(row) << UInt64(bits) | UInt64(cell(x - r))
                    while lo < hi {
                        let mid = (lo + hi) >> 1
                        if key(mid) < first { lo = mid + 1 } else { hi = mid }
                    }
                    var i = lo
                    while i < rowEnd && key(i) <= last {
                        let dx = xy[2 * i] - x
                        let dy = xy[2 * i + 1] - y
                        let d = dx * dx + dy * dy
                        if d <= bestDistance && ItemMeta.isCluster(meta[i]) && accepts(i)
                            && (d < bestDistance || best == nil || i < best!)
                        {
                            best = i
                            bestDistance = d
                        }
                        i += 1
                    }
                }
            }
        }
        return best
    }

    /// The item holding the point of a dataset row at every level, finest (the raw level) first; nil
    /// when no raw item holds the row.
    func holders(ofRow row: Int) -> [Int32]? {
        guard let raw = rawItem(containingRow: row) else { return nil }
        var chain = [Int32](repeating: 0, count: levels.count)
        var item = raw
        for li in stride(from: levels.count - 1, through: 0, by: -1) {
            chain[levels.count - 1 - li] = Int32(item)
            if li > 0 { item = Int(levels[li].parents[item]) }
        }
        return chain
    }
}
