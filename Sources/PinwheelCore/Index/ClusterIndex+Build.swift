/// Building the hierarchy: raw items, then one greedy clustering sweep per zoom, finest first.
extension ClusterIndex {
    /// The level above `maxZoom`: one item per point outside any same-coordinate group and one per
    /// group, put in ascending id order (a group's id is its first member's) before the stable grid
    /// sort, so equal data orders equally however its rows are shuffled.
    static func makeRawLevel(
        _ dataset: Dataset, groups: SameCoordinateGroups, pointValues: [Double], aggregates: [Aggregate], zoom: Int,
        bits: Int, buffers b: BuildBuffers
    ) -> ZoomLevel {
        let n = dataset.count
        let k = aggregates.count
        let groupByRow = groups.groupIndexByRow(rowCount: n)
        let itemCount = n - groups.rows.count + groups.count
        var ids = [UInt32](repeating: 0, count: itemCount)
        var at = 0
        dataset.coordinates.withUnsafeBufferPointer { coordinates in
            for row in 0..<n {
                let g = Int(groupByRow[row])
                // Degrees for now; projected below, in parallel.
                if g < 0 {
                    b.xy[2 * at] = coordinates[2 * row]
                    b.xy[2 * at + 1] = coordinates[2 * row + 1]
                    b.meta[at] = ItemMeta.make(count: 1, tag: 0, payload: UInt32(row))
                    ids[at] = dataset.ids[row]
                    for c in 0..<k { b.reduced[at * k + c] = pointValues[row * k + c] }
                    at += 1
                } else if groups.rows(of: g).first == Int32(row) {
                    // A group is one item, placed where its lowest-id member is met.
                    let center = groups.centers[g]
                    b.xy[2 * at] = center.lon
                    b.xy[2 * at + 1] = center.lat
                    b.meta[at] = ItemMeta.make(
                        count: UInt32(groups.size(of: g)), tag: ItemMeta.groupTag, payload: UInt32(g))
                    ids[at] = dataset.ids[row]
                    for c in 0..<k { b.reduced[at * k + c] = aggregates[c].identity }
                    for member in groups.rows(of: g) {
                        for c in 0..<k {
                            b.reduced[at * k + c] = aggregates[c].combine(
                                b.reduced[at * k + c], pointValues[Int(member) * k + c])
                        }
                    }
                    at += 1
                }
            }
        }
        let parts = itemCount >= b.parallelFrom ? 2 : 1
        Parallel.run(parts, concurrently: b.concurrently) { part in
            for i in (part * itemCount / parts)..<((part + 1) * itemCount / parts) {
                b.xy[2 * i] = Mercator.x(lon: b.xy[2 * i])
                b.xy[2 * i + 1] = Mercator.y(lat: b.xy[2 * i + 1])
            }
        }
        if !isAscending(ids) {
            var keys = ids.map { UInt64($0) }
            var byID = (0..<itemCount).map { UInt32($0) }
            RadixSort.sort(keys: &keys, values: &byID, bits: 32)
            byID.withUnsafeMutableBufferPointer { byID in
                let order = byID.baseAddress!
                let xy = b.gather(b.xy, order, count: itemCount, stride: 2)
                let meta = b.gather(b.meta, order, count: itemCount, stride: 1)
                let reduced = b.gather(b.reduced, order, count: itemCount, stride: k)
                for i in 0..<2 * itemCount { b.xy[i] = xy[i] }
                for i in 0..<itemCount { b.meta[i] = meta[i] }
                for i in 0..<itemCount * k { b.reduced[i] = reduced[i] }
            }
        }
        let order = b.gridOrder(count: itemCount, bits: bits)
        return ZoomLevel(
            zoom: zoom, gridBits: bits, isRaw: true, xy: b.gather(b.xy, order, count: itemCount, stride: 2),
            meta: b.gather(b.meta, order, count: itemCount, stride: 1), parents: [], firstChild: [], childOrder: [],
            reduced: b.gather(b.reduced, order, count: itemCount, stride: k))
    }

    private static func isAscending(_ ids: [UInt32]) -> Bool {
        ids.withUnsafeBufferPointer { p in
            for i in p.indices.dropFirst() where p[i - 1] >= p[i] { return false }
            return true
        }
    }

    /// Clusters `source` (zoom z + 1) into zoom z and fills `source.parents`; see ``ClusterSweep``.
    static func cluster(
        _ source: inout ZoomLevel, zoom z: Int, options: ClusterOptions, aggregates: [Aggregate],
        buffers b: BuildBuffers, ids: [UInt32], groupFirstIDs: [UInt32]
    ) -> ZoomLevel {
        let n = source.count
        let k = aggregates.count
        var parents = [Int32](repeating: -1, count: n)
        var made = 0
        source.xy.withUnsafeBufferPointer { xy in
            source.meta.withUnsafeBufferPointer { meta in
                source.reduced.withUnsafeBufferPointer { reduced in
                    ids.withUnsafeBufferPointer { ids in
                        groupFirstIDs.withUnsafeBufferPointer { groupFirstIDs in
                            parents.withUnsafeMutableBufferPointer { parents in
                                guard n > 0 else { return }
                                let sweep = ClusterSweep(
                                    xy: xy.baseAddress!, meta: meta.baseAddress!, reduced: reduced.baseAddress,
                                    ids: ids.baseAddress!, groupFirstIDs: groupFirstIDs.baseAddress ?? ids.baseAddress!,
                                    parents: parents.baseAddress!, buffers: b, aggregates: aggregates,
                                    gridBits: source.gridBits,
                                    radius: options.radius(atZoom: z), minPoints: UInt32(options.minPoints), zoom: z)
                                made = sweep.run(itemCount: n)
                            }
                        }
                    }
                }
            }
        }

        // Order the new level on its own grid (cells sized for clustering the next zoom down), then
        // point the source's parents and the new level's child lists at the final positions.
        let bitsZ = options.gridBits(clusteringZoom: z - 1)
        let order = b.gridOrder(count: made, bits: bitsZ)
        for new in 0..<made { b.position[Int(order[new])] = Int32(new) }
        var firstChild = [UInt32](repeating: 0, count: made + 1)
        var childOrder = [UInt32](repeating: 0, count: n)
        var xy: [Double] = []
        var meta: [UInt64] = []
        var reduced: [Double] = []
        let parts = made >= b.parallelFrom ? 2 : 1
        Parallel.run(parts, concurrently: b.concurrently) { part in
            if part == 1 {
                xy = b.gather(b.xy, order, count: made, stride: 2)
                return
            }
            if parts == 1 { xy = b.gather(b.xy, order, count: made, stride: 2) }
            meta = b.gather(b.meta, order, count: made, stride: 1)
            reduced = b.gather(b.reduced, order, count: made, stride: k)
            ClusterIndex.linkChildren(
                parents: &parents, position: b.position, made: made, firstChild: &firstChild, childOrder: &childOrder)
        }
        source.parents = parents
        return ZoomLevel(
            zoom: z, gridBits: bitsZ, isRaw: false, xy: xy, meta: meta, parents: [],
            firstChild: firstChild, childOrder: childOrder, reduced: reduced)
    }

    /// Points `parents` at the new positions and lists each new item's children (in source order).
    private static func linkChildren(
        parents: inout [Int32], position: UnsafeMutablePointer<Int32>, made: Int, firstChild: inout [UInt32],
        childOrder: inout [UInt32]
    ) {
        parents.withUnsafeMutableBufferPointer { parents in
            firstChild.withUnsafeMutableBufferPointer { first in
                childOrder.withUnsafeMutableBufferPointer { children in
                    for i in 0..<parents.count {
                        let p = position[Int(parents[i])]
                        parents[i] = p
                        first[Int(p) + 1] += 1
                    }
                    for p in 0..<made { first[p + 1] += first[p] }
                    // Next-free offsets, kept in `position` now that it is no longer needed.
                    for p in 0..<made { position[p] = Int32(first[p]) }
                    for i in 0..<parents.count {
                        let p = Int(parents[i])
                        children[Int(position[p])] = UInt32(i)
                        position[p] += 1
                    }
                }
            }
        }
    }
}
