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
        _ dataset: Dataset, groups: SameCoordinateGroups, pointSums: [Double], stride k: Int, zoom: Int, bits: Int,
        buffers b: BuildBuffers
    ) -> RawItems {
        let n = dataset.count
        let groupByRow = groups.groupIndexByRow(rowCount: n)
        let itemCount = n - groups.rows.count + groups.count
        var refs = [Int32](repeating: 0, count: itemCount)
        var ids = [UInt32](repeating: 0, count: itemCount)
        var at = 0
        dataset.coordinates.withUnsafeBufferPointer { coordinates in
            for row in 0..<n {
                let g = Int(groupByRow[row])
                if g < 0 {
                    b.xy[2 * at] = Mercator.x(lon: coordinates[2 * row])
                    b.xy[2 * at + 1] = Mercator.y(lat: coordinates[2 * row + 1])
                    b.counts[at] = 1
                    refs[at] = Int32(row)
                    ids[at] = dataset.ids[row]
                    for c in 0..<k { b.sums[at * k + c] = pointSums[row * k + c] }
                    at += 1
                } else if groups.rows(of: g).first == Int32(row) {
                    // A group is one item, placed where its lowest-id member is met.
                    let center = groups.centers[g]
                    b.xy[2 * at] = Mercator.x(lon: center.lon)
                    b.xy[2 * at + 1] = Mercator.y(lat: center.lat)
                    b.counts[at] = UInt32(groups.size(of: g))
                    refs[at] = -Int32(g) - 1
                    ids[at] = dataset.ids[row]
                    for c in 0..<k { b.sums[at * k + c] = 0 }
                    for member in groups.rows(of: g) {
                        for c in 0..<k { b.sums[at * k + c] += pointSums[Int(member) * k + c] }
                    }
                    at += 1
                }
            }
        }
        if !isAscending(ids) {
            // Origin-id order first, so the stable grid sort below orders each cell by content.
            var keys = ids.map { UInt64($0) }
            var byID = (0..<itemCount).map { UInt32($0) }
            RadixSort.sort(keys: &keys, values: &byID, bits: 32)
            byID.withUnsafeMutableBufferPointer { byID in
                let order = byID.baseAddress!
                let xy = b.gather(b.xy, order, count: itemCount, stride: 2)
                let counts = b.gather(b.counts, order, count: itemCount, stride: 1)
                let sums = b.gather(b.sums, order, count: itemCount, stride: k)
                for i in 0..<2 * itemCount { b.xy[i] = xy[i] }
                for i in 0..<itemCount { b.counts[i] = counts[i] }
                for i in 0..<itemCount * k { b.sums[i] = sums[i] }
                refs = refs.withUnsafeMutableBufferPointer { b.gather($0.baseAddress!, order, count: itemCount, stride: 1) }
                ids = ids.withUnsafeMutableBufferPointer { b.gather($0.baseAddress!, order, count: itemCount, stride: 1) }
            }
        }
        let order = b.gridOrder(count: itemCount, bits: bits)
        let level = ZoomLevel(
            zoom: zoom, gridBits: bits, isRaw: true, xy: b.gather(b.xy, order, count: itemCount, stride: 2),
            counts: b.gather(b.counts, order, count: itemCount, stride: 1), refs: [], parents: [], firstChild: [],
            childOrder: [], sums: b.gather(b.sums, order, count: itemCount, stride: k))
        return RawItems(
            level: level,
            refs: refs.withUnsafeMutableBufferPointer { b.gather($0.baseAddress!, order, count: itemCount, stride: 1) },
            ids: ids.withUnsafeMutableBufferPointer { b.gather($0.baseAddress!, order, count: itemCount, stride: 1) })
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
    /// neighbours lie in the three grid rows around it, each read through a lane pointer that only
    /// moves forward as the sweep moves east along a row.
    static func cluster(
        _ source: inout ZoomLevel, zoom z: Int, options: ClusterOptions, stride k: Int, buffers: BuildBuffers
    ) -> ZoomLevel {
        let n = source.count
        let bits = source.gridBits
        let side = 1 << bits
        let scale = Double(side)
        let inverseScale = 1 / scale
        let r = options.radius(atZoom: z)
        let r2 = r * r
        let minPoints = UInt32(options.minPoints)
        let clusterTag = UInt32(z + 1) << ZoomLevel.originBits
        let isRaw = source.isRaw
        let b = buffers
        var parents = [Int32](repeating: -1, count: n)
        var made = 0

        source.xy.withUnsafeBufferPointer { xyBuffer in
            source.counts.withUnsafeBufferPointer { countBuffer in
                source.refs.withUnsafeBufferPointer { refBuffer in
                    source.sums.withUnsafeBufferPointer { sumBuffer in
                        parents.withUnsafeMutableBufferPointer { parentBuffer in
                            guard n > 0 else { return }
                            let xy = xyBuffer.baseAddress!
                            let counts = countBuffer.baseAddress!
                            let refs = refBuffer.baseAddress
                            let sums = sumBuffer.baseAddress
                            let parents = parentBuffer.baseAddress!

                            // Grid rows present, as runs of items; a sentinel run closes the last one.
                            var runCount = 0
                            var previous = -1
                            for i in 0..<n {
                                let row = min(Int(xy[2 * i + 1] * scale), side - 1)
                                if row != previous {
                                    b.runRows[runCount] = row
                                    b.runStarts[runCount] = i
                                    runCount += 1
                                    previous = row
                                }
                            }
                            b.runRows[runCount] = Int.max
                            b.runStarts[runCount] = n

                            @inline(__always) func copy(_ i: Int) {
                                parents[i] = Int32(made)
                                b.xy[2 * made] = xy[2 * i]
                                b.xy[2 * made + 1] = xy[2 * i + 1]
                                b.counts[made] = counts[i]
                                b.refs[made] = isRaw ? UInt32(i) : refs![i]
                                for c in 0..<k { b.sums[made * k + c] = sums![i * k + c] }
                                made += 1
                            }

                            for run in 0..<runCount {
                                let row = b.runRows[run]
                                // Lanes: the grid rows above, at and below this one (empty when absent).
                                var above = (start: 0, end: 0)
                                var at = (start: b.runStarts[run], end: b.runStarts[run + 1])
                                var below = (start: 0, end: 0)
                                if run > 0 && b.runRows[run - 1] == row - 1 {
                                    above = (b.runStarts[run - 1], b.runStarts[run])
                                }
                                if b.runRows[run + 1] == row + 1 { below = (b.runStarts[run + 1], b.runStarts[run + 2]) }
                                for i in b.runStarts[run]..<b.runStarts[run + 1] where parents[i] < 0 {
                                    let xi = xy[2 * i]
                                    let yi = xy[2 * i + 1]
                                    let column = Double(min(Int(xi * scale), side - 1))
                                    // Lane items west of column - 1 are passed for good; a scan stops
                                    // east of column + 1.
                                    let west = (column - 1) * inverseScale
                                    let east = column + 2 >= scale ? 2 : (column + 2) * inverseScale
                                    var found = 0
                                    var total = counts[i]
                                    scanLane(
                                        &above, west, east, i, xi, yi, r2, xy, counts, parents, b.neighbours, &found,
                                        &total)
                                    scanLane(
                                        &at, west, east, i, xi, yi, r2, xy, counts, parents, b.neighbours, &found,
                                        &total)
                                    scanLane(
                                        &below, west, east, i, xi, yi, r2, xy, counts, parents, b.neighbours, &found,
                                        &total)
                                    if total > counts[i] && total >= minPoints {
                                        let weight = Double(counts[i])
                                        var wx = xi * weight
                                        var wy = yi * weight
                                        parents[i] = Int32(made)
                                        for c in 0..<k { b.sums[made * k + c] = sums![i * k + c] }
                                        for f in 0..<found {
                                            let j = Int(b.neighbours[f])
                                            let w = Double(counts[j])
                                            wx += xy[2 * j] * w
                                            wy += xy[2 * j + 1] * w
                                            parents[j] = Int32(made)
                                            for c in 0..<k { b.sums[made * k + c] += sums![j * k + c] }
                                        }
                                        // The cluster: weighted centroid, total count, and the seed's
                                        // origin tagged with the zoom that made it.
                                        b.xy[2 * made] = wx / Double(total)
                                        b.xy[2 * made + 1] = wy / Double(total)
                                        b.counts[made] = total
                                        let seedRef = isRaw ? UInt32(i) : refs![i]
                                        b.refs[made] = clusterTag | (seedRef & ZoomLevel.originMask)
                                        made += 1
                                    } else {
                                        copy(i)
                                        for f in 0..<found { copy(Int(b.neighbours[f])) }
                                    }
                                }
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
        parents.withUnsafeMutableBufferPointer { parents in
            firstChild.withUnsafeMutableBufferPointer { first in
                childOrder.withUnsafeMutableBufferPointer { children in
                    for i in 0..<n {
                        let p = b.position[Int(parents[i])]
                        parents[i] = p
                        first[Int(p) + 1] += 1
                    }
                    for p in 0..<made { first[p + 1] += first[p] }
                    // Each parent's slice in source order, via next-free offsets kept in `position`.
                    for p in 0..<made { b.position[p] = Int32(first[p]) }
                    for i in 0..<n {
                        let p = Int(parents[i])
                        children[Int(b.position[p])] = UInt32(i)
                        b.position[p] += 1
                    }
                }
            }
        }
        source.parents = parents
        return ZoomLevel(
            zoom: z, gridBits: bitsZ, isRaw: false, xy: b.gather(b.xy, order, count: made, stride: 2),
            counts: b.gather(b.counts, order, count: made, stride: 1),
            refs: b.gather(b.refs, order, count: made, stride: 1), parents: [], firstChild: firstChild,
            childOrder: childOrder, sums: b.gather(b.sums, order, count: made, stride: k))
    }

    /// Reads one lane from its pointer eastward: advances the pointer past items west of `west` for good,
    /// then collects untaken items within the radius until the lane passes `east`.
    @inline(__always)
    private static func scanLane(
        _ lane: inout (start: Int, end: Int), _ west: Double, _ east: Double, _ i: Int, _ xi: Double, _ yi: Double,
        _ r2: Double, _ xy: UnsafePointer<Double>, _ counts: UnsafePointer<UInt32>,
        _ parents: UnsafeMutablePointer<Int32>, _ neighbours: UnsafeMutablePointer<Int32>, _ found: inout Int,
        _ total: inout UInt32
    ) {
        var j = lane.start
        let end = lane.end
        while j < end && xy[2 * j] < west { j += 1 }
        lane.start = j
        while j < end {
            let xj = xy[2 * j]
            if xj >= east { break }
            if parents[j] < 0 && j != i {
                let dx = xj - xi
                let dy = xy[2 * j + 1] - yi
                if dx * dx + dy * dy <= r2 {
                    neighbours[found] = Int32(j)
                    found += 1
                    total += counts[j]
                }
            }
            j += 1
        }
    }
}

/// Scratch memory one build reuses for every zoom, sized for the raw level, so clustering a zoom
/// allocates only the arrays that zoom keeps. Pages are touched only as far as they are used.
final class BuildBuffers {
    let capacity: Int
    let stride: Int
    /// The zoom being made, in the order the sweep makes it: x at 2i, y at 2i+1.
    let xy: UnsafeMutablePointer<Double>
    let counts: UnsafeMutablePointer<UInt32>
    let refs: UnsafeMutablePointer<UInt32>
    let sums: UnsafeMutablePointer<Double>
    /// Neighbours found around the current seed.
    let neighbours: UnsafeMutablePointer<Int32>
    /// Grid rows of the source and the first item of each.
    let runRows: UnsafeMutablePointer<Int>
    let runStarts: UnsafeMutablePointer<Int>
    /// Radix sort keys, values and their scratch.
    let keys: UnsafeMutablePointer<UInt64>
    let keyScratch: UnsafeMutablePointer<UInt64>
    let order: UnsafeMutablePointer<UInt32>
    let orderScratch: UnsafeMutablePointer<UInt32>
    /// Old index → new position, then next-free child offsets.
    let position: UnsafeMutablePointer<Int32>

    init(capacity: Int, stride: Int) {
        let c = max(capacity, 1)
        self.capacity = c
        self.stride = stride
        xy = .allocate(capacity: 2 * c)
        counts = .allocate(capacity: c)
        refs = .allocate(capacity: c)
        sums = .allocate(capacity: max(1, stride * c))
        neighbours = .allocate(capacity: c)
        runRows = .allocate(capacity: c + 2)
        runStarts = .allocate(capacity: c + 2)
        keys = .allocate(capacity: c)
        keyScratch = .allocate(capacity: c)
        order = .allocate(capacity: c)
        orderScratch = .allocate(capacity: c)
        position = .allocate(capacity: c)
    }

    deinit {
        for p in [xy, sums] as [UnsafeMutablePointer<Double>] { p.deallocate() }
        for p in [counts, refs, order, orderScratch] as [UnsafeMutablePointer<UInt32>] { p.deallocate() }
        for p in [neighbours, position] as [UnsafeMutablePointer<Int32>] { p.deallocate() }
        runRows.deallocate()
        runStarts.deallocate()
        keys.deallocate()
        keyScratch.deallocate()
    }

    /// The permutation (new position → old index) ordering the first `count` items of ``xy`` by grid
    /// cell key, stable within a cell.
    func gridOrder(count: Int, bits: Int) -> UnsafeMutablePointer<UInt32> {
        let indexBits = 26
        if 2 * bits + indexBits <= 64 {
            // Cell key above the item's index in one word: one array to move, and unique keys keep
            // the order of equal cells as stable as the pair sort would.
            for i in 0..<count {
                keys[i] = GridOrder.key(x: xy[2 * i], y: xy[2 * i + 1], bits: bits) << UInt64(indexBits) | UInt64(i)
            }
            let inScratch = RadixSort.sortKeys(
                UnsafeMutableBufferPointer(start: keys, count: count),
                scratch: UnsafeMutableBufferPointer(start: keyScratch, count: count), lowBit: indexBits,
                bits: 2 * bits)
            let sorted = inScratch ? keyScratch : keys
            let indexMask = UInt64((1 << indexBits) - 1)
            for i in 0..<count { order[i] = UInt32(sorted[i] & indexMask) }
            return order
        }
        for i in 0..<count {
            keys[i] = GridOrder.key(x: xy[2 * i], y: xy[2 * i + 1], bits: bits)
            order[i] = UInt32(i)
        }
        let inScratch = RadixSort.sort(
            keys: UnsafeMutableBufferPointer(start: keys, count: count),
            values: UnsafeMutableBufferPointer(start: order, count: count),
            keyScratch: UnsafeMutableBufferPointer(start: keyScratch, count: count),
            valueScratch: UnsafeMutableBufferPointer(start: orderScratch, count: count), bits: 2 * bits)
        return inScratch ? orderScratch : order
    }

    /// A new array of `count` items of `source` taken in `order`, `stride` values per item.
    func gather<T>(_ source: UnsafeMutablePointer<T>, _ order: UnsafeMutablePointer<UInt32>, count: Int, stride: Int)
        -> [T]
    {
        guard stride > 0 else { return [] }
        return [T](unsafeUninitializedCapacity: count * stride) { out, initialized in
            var at = 0
            for new in 0..<count {
                let from = Int(order[new]) * stride
                for s in 0..<stride { (out.baseAddress! + at + s).initialize(to: source[from + s]) }
                at += stride
            }
            initialized = count * stride
        }
    }
}
