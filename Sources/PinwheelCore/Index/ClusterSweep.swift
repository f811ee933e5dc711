/// One zoom's greedy clustering, as supercluster: in sweep order, each item not yet taken gathers every
/// untaken item within the zoom's radius; when they add up to `minPoints` points and the item has at
/// least one neighbour, they become one cluster at their count-weighted centroid, otherwise each is
/// copied as it is.
///
/// Source items are in grid order with cells at least a radius wide, so an item's neighbours lie in
/// the three grid rows around it, each read through a lane pointer that only moves forward as the sweep
/// moves east along a row. Large zooms are swept by two threads: the rows above a split and the rows
/// below it, which touch disjoint rows, then the two rows at the split; the sweep order is fixed by
/// the data alone, so results never depend on thread timing.
struct ClusterSweep {
    let xy: UnsafePointer<Double>
    let meta: UnsafePointer<UInt64>
    /// Each item's reduced aggregate values, `stride` per item.
    let reduced: UnsafePointer<Double>?
    /// How each aggregate value combines when items merge.
    let aggregates: [Aggregate]
    /// Dataset ids by row, and each same-coordinate group's first (lowest) member id, to name seeds.
    let ids: UnsafePointer<UInt32>
    let groupFirstIDs: UnsafePointer<UInt32>
    let parents: UnsafeMutablePointer<Int32>
    let out: BuildBuffers
    let stride: Int
    let side: Int
    let scale: Double
    let inverseScale: Double
    let radius: Double
    let radiusSquared: Double
    let minPoints: UInt32
    /// A new cluster's kind: its zoom + 1.
    let clusterTag: UInt64

    init(
        xy: UnsafePointer<Double>, meta: UnsafePointer<UInt64>, reduced: UnsafePointer<Double>?,
        ids: UnsafePointer<UInt32>, groupFirstIDs: UnsafePointer<UInt32>, parents: UnsafeMutablePointer<Int32>,
        buffers: BuildBuffers, aggregates: [Aggregate], gridBits: Int, radius: Double, minPoints: UInt32, zoom: Int
    ) {
        self.xy = xy
        self.meta = meta
        self.reduced = reduced
        self.ids = ids
        self.groupFirstIDs = groupFirstIDs
        self.parents = parents
        self.out = buffers
        self.aggregates = aggregates
        stride = aggregates.count
        side = 1 << gridBits
        scale = Double(side)
        inverseScale = 1 / scale
        self.radius = radius
        radiusSquared = radius * radius
        self.minPoints = minPoints
        clusterTag = UInt64(zoom + 1)
    }

    /// Clusters all `itemCount` source items into ``BuildBuffers``' output arrays.
    /// - Returns: how many items the new zoom has.
    func run(itemCount n: Int) -> Int {
        // Grid rows present, as runs of items; a sentinel run closes the last one.
        var runCount = 0
        var previous = -1
        for i in 0..<n {
            let row = min(Int(xy[2 * i + 1] * scale), side - 1)
            if row != previous {
                out.runRows[runCount] = row
                out.runStarts[runCount] = i
                runCount += 1
                previous = row
            }
        }
        out.runRows[runCount] = Int.max
        out.runStarts[runCount] = n
        guard n >= 2 * out.parallelFrom && runCount >= 8 else {
            return sweep(runs: 0..<runCount, outputAt: 0, neighbours: out.neighbours[0])
        }
        // Split at the middle item's row: the north part sweeps rows before split - 1 (touching rows
        // up to split - 1), the south part rows after split (touching rows from split on).
        var split = 2
        while split < runCount - 2 && out.runStarts[split] < n / 2 { split += 1 }
        let southOutput = out.runStarts[split]
        var northEnd = 0
        var southEnd = 0
        Parallel.run(2, concurrently: out.concurrently) { part in
            if part == 0 {
                northEnd = sweep(runs: 0..<(split - 1), outputAt: 0, neighbours: out.neighbours[0])
            } else {
                southEnd = sweep(runs: (split + 1)..<runCount, outputAt: southOutput, neighbours: out.neighbours[1])
            }
        }
        // The south part wrote at most one item per item of its rows from `southOutput` on; close the gap.
        let northCount = northEnd
        let southCount = southEnd - southOutput
        let shift = southOutput - northCount
        if shift > 0 {
            for i in 0..<southCount {
                let from = southOutput + i
                let to = northCount + i
                out.xy[2 * to] = out.xy[2 * from]
                out.xy[2 * to + 1] = out.xy[2 * from + 1]
                out.meta[to] = out.meta[from]
                for c in 0..<stride { out.reduced[to * stride + c] = out.reduced[from * stride + c] }
            }
            for i in southOutput..<n where parents[i] >= Int32(southOutput) { parents[i] -= Int32(shift) }
        }
        return sweep(runs: (split - 1)..<(split + 1), outputAt: northCount + southCount, neighbours: out.neighbours[0])
    }

    /// Sweeps the source rows of runs `runs`, writing new items from `outputAt`.
    /// - Returns: the index after the last item written.
    func sweep(runs: Range<Int>, outputAt: Int, neighbours: UnsafeMutablePointer<Int32>) -> Int {
        var made = outputAt
        let k = stride
        for run in runs {
            let row = out.runRows[run]
            // Lanes: the grid rows above, at and below this one (empty when absent).
            var above = (start: 0, end: 0)
            var at = (start: out.runStarts[run], end: out.runStarts[run + 1])
            var below = (start: 0, end: 0)
            if run > 0 && out.runRows[run - 1] == row - 1 { above = (out.runStarts[run - 1], out.runStarts[run]) }
            if out.runRows[run + 1] == row + 1 { below = (out.runStarts[run + 1], out.runStarts[run + 2]) }
            let rowNorth = Double(row) * inverseScale
            let rowSouth = rowNorth + inverseScale
            for i in out.runStarts[run]..<out.runStarts[run + 1] where parents[i] < 0 {
                let xi = xy[2 * i]
                let yi = xy[2 * i + 1]
                let column = Double(min(Int(xi * scale), side - 1))
                // Lane items west of column - 1 are passed for good. A scan stops past the last cell
                // the radius reaches (at most column + 1), and skips rows the radius does not reach.
                let west = (column - 1) * inverseScale
                let reach = (xi + radius) * scale
                let east = reach >= scale ? 2 : (reach.rounded(.down) + 1) * inverseScale
                var found = 0
                let count = ItemMeta.count(meta[i])
                var total = count
                if yi - radius < rowNorth { scanLane(&above, west, east, i, xi, yi, neighbours, &found, &total) }
                scanLane(&at, west, east, i, xi, yi, neighbours, &found, &total)
                if yi + radius >= rowSouth { scanLane(&below, west, east, i, xi, yi, neighbours, &found, &total) }
                if total > count && total >= minPoints {
                    let weight = Double(count)
                    var wx = xi * weight
                    var wy = yi * weight
                    parents[i] = Int32(made)
                    for c in 0..<k { out.reduced[made * k + c] = reduced![i * k + c] }
                    for f in 0..<found {
                        let j = Int(neighbours[f])
                        let w = Double(ItemMeta.count(meta[j]))
                        wx += xy[2 * j] * w
                        wy += xy[2 * j + 1] * w
                        parents[j] = Int32(made)
                        for c in 0..<k {
                            out.reduced[made * k + c] = aggregates[c].combine(
                                out.reduced[made * k + c], reduced![j * k + c])
                        }
                    }
                    // The cluster: weighted centroid, total count, and the seed's origin tagged with
                    // the zoom that made it.
                    out.xy[2 * made] = wx / Double(total)
                    out.xy[2 * made + 1] = wy / Double(total)
                    out.meta[made] = ItemMeta.make(count: total, tag: clusterTag, payload: seedID(i))
                    made += 1
                } else {
                    copy(i, to: made)
                    made += 1
                    for f in 0..<found {
                        copy(Int(neighbours[f]), to: made)
                        made += 1
                    }
                }
            }
        }
        return made
    }

    /// The dataset id of the point an item stands on: its own, its group's first member's, or its seed's.
    @inline(__always) private func seedID(_ i: Int) -> UInt32 {
        let m = meta[i]
        switch ItemMeta.tag(m) {
        case 0: return ids[Int(ItemMeta.payload(m))]
        case ItemMeta.groupTag: return groupFirstIDs[Int(ItemMeta.payload(m))]
        default: return ItemMeta.payload(m)
        }
    }

    /// Copies source item i unchanged to output `at`.
    @inline(__always) private func copy(_ i: Int, to at: Int) {
        parents[i] = Int32(at)
        out.xy[2 * at] = xy[2 * i]
        out.xy[2 * at + 1] = xy[2 * i + 1]
        out.meta[at] = meta[i]
        for c in 0..<stride { out.reduced[at * stride + c] = reduced![i * stride + c] }
    }

    /// Reads one lane from its pointer eastward: moves the pointer past items west of `west` for good,
    /// then collects untaken items within the radius until the lane passes `east`.
    @inline(__always) private func scanLane(
        _ lane: inout (start: Int, end: Int), _ west: Double, _ east: Double, _ i: Int, _ xi: Double,
        _ yi: Double, _ neighbours: UnsafeMutablePointer<Int32>, _ found: inout Int, _ total: inout UInt32
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
                if dx * dx + dy * dy <= radiusSquared {
                    neighbours[found] = Int32(j)
                    found += 1
                    total += ItemMeta.count(meta[j])
                }
            }
            j += 1
        }
    }
}
