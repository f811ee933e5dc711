/// Building the hierarchy: raw items, then one greedy clustering sweep per zoom, finest first.
extension ClusterIndex {
    /// The level above `maxZoom`: one item per point outside any same-coordinate group and one per group,
    /// in ascending origin id order before the grid sort, so equal data orders equally however its rows
    /// are shuffled.
    struct RawItems {
        var level: ZoomLevel
        /// Per raw item: its dataset row, or -(g + 1) for same-coordinate group g.
        var refs: [Int32]
        /// Per raw item: its dataset id; a group's is its first member's (lowest) id.
        var ids: [UInt32]
    }

    static func makeRawItems(
        _ dataset: Dataset, groups: SameCoordinateGroups, pointSums: [Double], stride k: Int, zoom: Int, bits: Int
    ) -> RawItems {
        let n = dataset.count
        let groupByRow = groups.groupIndexByRow(rowCount: n)
        let itemCount = n - groups.rows.count + groups.count
        var xy = [Double](repeating: 0, count: 2 * itemCount)
        var counts = [UInt32](repeating: 1, count: itemCount)
        var refs = [Int32](repeating: 0, count: itemCount)
        var ids = [UInt32](repeating: 0, count: itemCount)
        var sums = [Double](repeating: 0, count: itemCount * k)
        var at = 0
        for row in 0..<n {
            let g = Int(groupByRow[row])
            if g < 0 {
                xy[2 * at] = Mercator.x(lon: dataset.lon(row))
                xy[2 * at + 1] = Mercator.y(lat: dataset.lat(row))
                refs[at] = Int32(row)
                ids[at] = dataset.ids[row]
                for c in 0..<k { sums[at * k + c] = pointSums[row * k + c] }
                at += 1
            } else if groups.rows(of: g).first == Int32(row) {
                // A group is one item, placed where its lowest-id member is met.
                let center = groups.centers[g]
                xy[2 * at] = Mercator.x(lon: center.lon)
                xy[2 * at + 1] = Mercator.y(lat: center.lat)
                counts[at] = UInt32(groups.size(of: g))
                refs[at] = -Int32(g) - 1
                ids[at] = dataset.ids[row]
                for member in groups.rows(of: g) {
                    for c in 0..<k { sums[at * k + c] += pointSums[Int(member) * k + c] }
                }
                at += 1
            }
        }
        if !isAscending(ids) {
            var keys = ids.map { UInt64($0) }
            var byID = (0..<itemCount).map { UInt32($0) }
            RadixSort.sort(keys: &keys, values: &byID, bits: 32)
            xy = GridOrder.gather(xy, byID, stride: 2)
            counts = GridOrder.gather(counts, byID, stride: 1)
            refs = GridOrder.gather(refs, byID, stride: 1)
            ids = GridOrder.gather(ids, byID, stride: 1)
            sums = GridOrder.gather(sums, byID, stride: k)
        }
        let order = GridOrder.order(xy: xy, bits: bits)
        let level = ZoomLevel(
            zoom: zoom, gridBits: bits, isRaw: true, xy: GridOrder.gather(xy, order, stride: 2),
            counts: GridOrder.gather(counts, order, stride: 1), refs: [], parents: [], firstChild: [],
            childOrder: [], sums: GridOrder.gather(sums, order, stride: k))
        return RawItems(
            level: level, refs: GridOrder.gather(refs, order, stride: 1), ids: GridOrder.gather(ids, order, stride: 1))
    }

    private static func isAscending(_ ids: [UInt32]) -> Bool {
        ids.withUnsafeBufferPointer { p in
            for i in p.indices.dropFirst() where p[i - 1] >= p[i] { return false }
            return true
        }
    }

    /// Clusters `source` (zoom z + 1) into zoom z and fills `source.parents`.
    ///
    /// Greedy, as supercluster: in source order, each item not yet taken gathers every untaken item
    /// within the zoom's radius; when they add up to `minPoints` points and the item has at least one
    /// neighbour, they become one cluster at their count-weighted centroid, otherwise each is copied
    /// as it is. Source items are in grid order with cells at least a radius wide, so an item's
    /// neighbours lie in the three grid rows around it, each read through a pointer that only moves
    /// forward as the sweep moves east along a row.
    static func cluster(_ source: inout ZoomLevel, zoom z: Int, options: ClusterOptions, stride k: Int) -> ZoomLevel {
        let n = source.count
        let bits = source.gridBits
        let side = 1 << bits
        let scale = Double(side)
        let r = options.radius(atZoom: z)
        let r2 = r * r
        let minPoints = UInt32(options.minPoints)
        let clusterBits = UInt32(z + 1) << ZoomLevel.originBits

        var outXY = [Double](repeating: 0, count: 2 * n)
        var outCounts = [UInt32](repeating: 0, count: n)
        var outRefs = [UInt32](repeating: 0, count: n)
        var outSums = [Double](repeating: 0, count: n * k)
        var parents = [Int32](repeating: -1, count: n)
        var made = 0

        // Grid rows present in the source, as (row, first item); a final entry closes the last run.
        var runs: [(row: Int, start: Int)] = []
        source.xy.withUnsafeBufferPointer { xy in
            var previous = -1
            for i in 0..<n {
                let row = min(Int(xy[2 * i + 1] * scale), side - 1)
                if row != previous {
                    runs.append((row, i))
                    previous = row
                }
            }
        }
        runs.append((Int.max, n))

        var neighbours = [Int32]()
        neighbours.reserveCapacity(256)
        let isRaw = source.isRaw
        source.xy.withUnsafeBufferPointer { xy in
            source.counts.withUnsafeBufferPointer { counts in
                source.refs.withUnsafeBufferPointer { refs in
                    source.sums.withUnsafeBufferPointer { sums in
                        parents.withUnsafeMutableBufferPointer { parents in
                            outXY.withUnsafeMutableBufferPointer { oxy in
                                outCounts.withUnsafeMutableBufferPointer { oc in
                                    outRefs.withUnsafeMutableBufferPointer { orefs in
                                        outSums.withUnsafeMutableBufferPointer { os in
                                            // Copies item i unchanged as the next output item.
                                            func copy(_ i: Int) {
                                                parents[i] = Int32(made)
                                                oxy[2 * made] = xy[2 * i]
                                                oxy[2 * made + 1] = xy[2 * i + 1]
                                                oc[made] = counts[i]
                                                orefs[made] = isRaw ? UInt32(i) : refs[i]
                                                for c in 0..<k { os[made * k + c] = sums[i * k + c] }
                                                made += 1
                                            }
                                            for run in 0..<(runs.count - 1) {
                                                let row = runs[run].row
                                                // Up to three lanes: the rows above, at and below this one.
                                                var laneStart = (0, 0, 0)
                                                var laneEnd = (0, 0, 0)
                                                laneStart.1 = runs[run].start
                                                laneEnd.1 = runs[run + 1].start
                                                if run > 0 && runs[run - 1].row == row - 1 {
                                                    laneStart.0 = runs[run - 1].start
                                                    laneEnd.0 = runs[run].start
                                                }
                                                if runs[run + 1].row == row + 1 {
                                                    laneStart.2 = runs[run + 1].start
                                                    laneEnd.2 = runs[run + 2].start
                                                }
                                                for i in runs[run].start..<runs[run + 1].start where parents[i] < 0 {
                                                    let xi = xy[2 * i]
                                                    let yi = xy[2 * i + 1]
                                                    let column = Double(min(Int(xi * scale), side - 1))
                                                    // Items west of column - 1 are behind the lane
                                                    // pointer; a scan stops east of column + 1.
                                                    let westEdge = (column - 1) / scale
                                                    let eastEdge = column + 2 >= scale ? 2 : (column + 2) / scale
                                                    neighbours.removeAll(keepingCapacity: true)
                                                    var total = counts[i]
                                                    for lane in 0..<3 {
                                                        var j: Int
                                                        let end: Int
                                                        switch lane {
                                                        case 0: (j, end) = (laneStart.0, laneEnd.0)
                                                        case 1: (j, end) = (laneStart.1, laneEnd.1)
                                                        default: (j, end) = (laneStart.2, laneEnd.2)
                                                        }
                                                        while j < end && xy[2 * j] < westEdge { j += 1 }
                                                        switch lane {
                                                        case 0: laneStart.0 = j
                                                        case 1: laneStart.1 = j
                                                        default: laneStart.2 = j
                                                        }
                                                        while j < end && xy[2 * j] < eastEdge {
                                                            if parents[j] < 0 && j != i {
                                                                let dx = xy[2 * j] - xi
                                                                let dy = xy[2 * j + 1] - yi
                                                                if dx * dx + dy * dy <= r2 {
                                                                    neighbours.append(Int32(j))
                                                                    total += counts[j]
                                                                }
                                                            }
                                                            j += 1
                                                        }
                                                    }
                                                    if total > counts[i] && total >= minPoints {
                                                        let weight = Double(counts[i])
                                                        var wx = xi * weight
                                                        var wy = yi * weight
                                                        parents[i] = Int32(made)
                                                        for c in 0..<k { os[made * k + c] = sums[i * k + c] }
                                                        for j32 in neighbours {
                                                            let j = Int(j32)
                                                            let w = Double(counts[j])
                                                            wx += xy[2 * j] * w
                                                            wy += xy[2 * j + 1] * w
                                                            parents[j] = Int32(made)
                                                            for c in 0..<k { os[made * k + c] += sums[j * k + c] }
                                                        }
                                                        // The cluster: weighted centroid, total count,
                                                        // the seed's origin tagged with this zoom.
                                                        oxy[2 * made] = wx / Double(total)
                                                        oxy[2 * made + 1] = wy / Double(total)
                                                        oc[made] = total
                                                        let seedRef = isRaw ? UInt32(i) : refs[i]
                                                        orefs[made] = clusterBits | (seedRef & ZoomLevel.originMask)
                                                        made += 1
                                                    } else {
                                                        copy(i)
                                                        for j in neighbours { copy(Int(j)) }
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        outXY.removeLast(2 * (n - made))
        outCounts.removeLast(n - made)
        outRefs.removeLast(n - made)
        outSums.removeLast(k * (n - made))

        // Order the new level on its own grid (cells sized for clustering the next zoom down),
        // then point the source's parents and the new level's child lists at the final positions.
        let bitsZ = options.gridBits(clusteringZoom: z - 1)
        let order = GridOrder.order(xy: outXY, bits: bitsZ)
        var position = [Int32](repeating: 0, count: made)
        for (new, old) in order.enumerated() { position[Int(old)] = Int32(new) }
        var firstChild = [UInt32](repeating: 0, count: made + 1)
        var childOrder = [UInt32](repeating: 0, count: n)
        parents.withUnsafeMutableBufferPointer { parents in
            position.withUnsafeBufferPointer { position in
                firstChild.withUnsafeMutableBufferPointer { first in
                    childOrder.withUnsafeMutableBufferPointer { children in
                        for i in 0..<n {
                            let p = position[Int(parents[i])]
                            parents[i] = p
                            first[Int(p) + 1] += 1
                        }
                        for p in 0..<made { first[p + 1] += first[p] }
                        // Fill each parent's slice in source order, using the next-free offsets.
                        var next = Array(first[0..<made])
                        for i in 0..<n {
                            let p = Int(parents[i])
                            children[Int(next[p])] = UInt32(i)
                            next[p] += 1
                        }
                    }
                }
            }
        }
        source.parents = parents
        return ZoomLevel(
            zoom: z, gridBits: bitsZ, isRaw: false, xy: GridOrder.gather(outXY, order, stride: 2),
            counts: GridOrder.gather(outCounts, order, stride: 1), refs: GridOrder.gather(outRefs, order, stride: 1),
            parents: [], firstChild: firstChild, childOrder: childOrder,
            sums: GridOrder.gather(outSums, order, stride: k))
    }
}
