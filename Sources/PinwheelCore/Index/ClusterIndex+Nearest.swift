/// Lookups a live index needs of its base: the cluster nearest a spot at a level, and the items
/// holding a point.
extension ClusterIndex {
    /// The cluster item of level `li` nearest to (x, y) within `reach` times the radius its zoom
    /// clusters with.
    /// - Parameters:
    ///   - reach: how far to look, in radii.
    ///   - cells: the level's cell directory.
    ///   - accepts: whether a candidate item may take the spot (a live index refuses clusters emptied
    ///     by changes).
    /// - Returns: the item's index, nil when no cluster is that near.
    /// - Complexity: O(r · log g + k) for the r grid rows the radius reaches, cell-directory groups
    ///   of g items, and the k items in the cells it reaches.
    func nearestCluster(
        level li: Int, x: Double, y: Double, reach: Double, cells: CellDirectory, accepts: (Int) -> Bool
    ) -> Int? {
        let level = levels[li]
        guard level.count > 0 else { return nil }
        let r = options.radius(atZoom: level.zoom) * reach
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
                    let first = UInt64(row) << UInt64(bits) | UInt64(cell(x - r))
                    let last = UInt64(row) << UInt64(bits) | UInt64(cell(x + r))
                    let candidates = cells.items(from: first, through: last)
                    var lo = candidates.lowerBound
                    var hi = candidates.upperBound
                    let rowEnd = hi
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

    /// The raw-level item holding each dataset row: the point's own item, or its same-coordinate
    /// group's. One pass over the raw level, where finding one row's item is a search.
    func rawItemsByRow() -> [Int32] {
        let raw = levels[levels.count - 1]
        var items = [Int32](repeating: -1, count: dataset.count)
        for i in 0..<raw.count {
            let meta = raw.meta[i]
            let payload = Int(ItemMeta.payload(meta))
            if ItemMeta.tag(meta) == 0 {
                items[payload] = Int32(i)
            } else {
                for row in groups.rows(of: payload) { items[Int(row)] = Int32(i) }
            }
        }
        return items
    }

    /// The item holding raw item `raw` at every level, finest (the raw level) first.
    func holders(ofRawItem raw: Int) -> [Int32] {
        var chain = [Int32](repeating: 0, count: levels.count)
        var item = raw
        for li in stride(from: levels.count - 1, through: 0, by: -1) {
            chain[levels.count - 1 - li] = Int32(item)
            if li > 0 { item = Int(levels[li].parents[item]) }
        }
        return chain
    }
}
