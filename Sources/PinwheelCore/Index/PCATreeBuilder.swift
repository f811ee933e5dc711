/// Builds the flat arrays of a ``PCATree``: iterative, with an explicit stack, partitioning one
/// permutation of the items in place. An item is a single point or a whole same-coordinate group
/// (weighted by its size), so a group is never split and always ends as one leaf. Each split is a
/// single pass over the node's items that both partitions them and accumulates the two children's
/// moments, so every node is read once.
struct PCATreeBuilder {
    /// Below this depth nodes split on their principal axis; deeper ones split by index halves,
    /// which bounds the depth by `pcaDepthLimit + log2(n)` and the build by O(n log n) whatever the
    /// input. Mean splits peel off at most a few points per level only when every level halves the
    /// extent, which doubles run out of after about a hundred levels, so real data never gets here.
    static let defaultPCADepthLimit = 96
    private let pcaDepthLimit: Int

    /// Rows in tree order (after ``build()``); a group's rows are in dataset-id order.
    private(set) var order: [UInt32] = []
    private let rowCount: Int
    private(set) var nodes: [PCANode] = []
    private(set) var centroids: [Double] = []
    private(set) var ranges: [UInt32] = []
    private(set) var depths: [UInt16] = []
    private var nodeCount = 0

    /// Item x, y at 2i, 2i + 1 in Mercator units, permuted in place during the build.
    private var itemXY: [Double] = []
    /// Item smallest dataset id.
    private var itemIDs: [UInt32] = []
    /// Item weight: points it stands for.
    private var itemWeights: [UInt32] = []
    /// Item reference: a row (≥ 0) or `~g` for same-coordinate group g.
    private var itemRefs: [Int32] = []
    private let groups: SameCoordinateGroups
    private let dataset: Dataset

    init(
        dataset: Dataset, groups: SameCoordinateGroups, groupOfRow: [Int32],
        pcaDepthLimit: Int = PCATreeBuilder.defaultPCADepthLimit
    ) {
        self.pcaDepthLimit = pcaDepthLimit
        self.groups = groups
        self.dataset = dataset
        let n = dataset.count
        rowCount = n
        // Items in row order; a group stands where its lowest-id member's row is.
        let items = n - groups.rows.count + groups.count
        itemXY.reserveCapacity(2 * items)
        itemIDs.reserveCapacity(items)
        itemWeights.reserveCapacity(items)
        itemRefs.reserveCapacity(items)
        for row in 0..<n {
            let g = Int(groupOfRow[row])
            if g < 0 {
                itemXY.append(Mercator.x(lon: dataset.lon(row)))
                itemXY.append(Mercator.y(lat: dataset.lat(row)))
                itemIDs.append(dataset.ids[row])
                itemWeights.append(1)
                itemRefs.append(Int32(row))
            } else if groups.rows(of: g).first == Int32(row) {
                let center = groups.centers[g]
                itemXY.append(Mercator.x(lon: center.lon))
                itemXY.append(Mercator.y(lat: center.lat))
                itemIDs.append(dataset.ids[row])
                itemWeights.append(UInt32(groups.size(of: g)))
                itemRefs.append(~Int32(g))
            }
        }
    }

    /// A node waiting to be split, with its covariance (the mean is its stored centroid).
    private struct Pending {
        var node: Int
        var cxx: Double
        var cxy: Double
        var cyy: Double
    }

    mutating func build() {
        let n = itemIDs.count
        guard n > 0 else { return }
        // Every leaf holds exactly one item, so a full binary tree over n items has 2n - 1 nodes.
        let capacity = 2 * n - 1
        nodes = [PCANode](
            repeating: PCANode(minX: 0, minY: 0, maxX: 0, maxY: 0, firstChild: -1, parent: -1, size: 0, minID: 0),
            count: capacity)
        centroids = [Double](repeating: 0, count: 2 * capacity)
        ranges = [UInt32](repeating: 0, count: 2 * capacity)
        depths = [UInt16](repeating: 0, count: capacity)

        let origin = (x: itemXY[0], y: itemXY[1])
        let rootMoments = moments(of: 0..<n, about: origin)
        var stack: [Pending] = []
        stack.append(makeNode(start: 0, end: n, depth: 0, parent: -1, moments: rootMoments, origin: origin))

        while let pending = stack.popLast() {
            let node = pending.node
            let start = Int(ranges[2 * node])
            let end = Int(ranges[2 * node + 1])
            if end - start == 1 { continue }
            let mean = (x: centroids[2 * node], y: centroids[2 * node + 1])
            let axis = PCATreeBuilder.principalAxis(cxx: pending.cxx, cxy: pending.cxy, cyy: pending.cyy)
            let depth = Int(depths[node])
            var (mid, left, right) = partition(start..<end, mean: mean, axis: axis)
            if mid == start || mid == end || depth >= pcaDepthLimit {
                // No variance to split on (distinct coordinates that project to one Mercator point,
                // as beyond ±85.05°), rounding left one side empty, or the depth limit: halve the run.
                mid = (start + end) / 2
                left = moments(of: start..<mid, about: mean)
                right = moments(of: mid..<end, about: mean)
            }
            nodes[node].firstChild = Int32(nodeCount)
            let leftPending = makeNode(
                start: start, end: mid, depth: depth + 1, parent: node, moments: left, origin: mean)
            let rightPending = makeNode(
                start: mid, end: end, depth: depth + 1, parent: node, moments: right, origin: mean)
            stack.append(rightPending)
            stack.append(leftPending)
        }
        assert(nodeCount == capacity, "every leaf holds one item")
        expandItems()
        if groups.toleranceMetres > 0 { widenGroupBoxes() }
    }

    /// A group within a tolerance sits at its seed's coordinate in the tree, but its members lie up
    /// to the tolerance away; widens each group leaf's box, and its ancestors', to hold them, so a
    /// viewport that holds a member meets the group.
    private mutating func widenGroupBoxes() {
        for node in 0..<nodeCount where nodes[node].firstChild < 0 && nodes[node].size > 1 {
            var (minX, minY) = (Double.infinity, Double.infinity)
            var (maxX, maxY) = (-Double.infinity, -Double.infinity)
            for position in Int(ranges[2 * node])..<Int(ranges[2 * node + 1]) {
                let row = Int(order[position])
                let x = Mercator.x(lon: dataset.lon(row))
                let y = Mercator.y(lat: dataset.lat(row))
                (minX, minY, maxX, maxY) = (min(minX, x), min(minY, y), max(maxX, x), max(maxY, y))
            }
            var k = node
            while k >= 0 {
                nodes[k].minX = min(nodes[k].minX, minX)
                nodes[k].minY = min(nodes[k].minY, minY)
                nodes[k].maxX = max(nodes[k].maxX, maxX)
                nodes[k].maxY = max(nodes[k].maxY, maxY)
                k = Int(nodes[k].parent)
            }
        }
    }

    /// Replaces item positions by row positions: lays every item's rows out in tree order and maps
    /// each node's item run onto its row run.
    private mutating func expandItems() {
        let n = itemRefs.count
        var rowStart = [UInt32](repeating: 0, count: n + 1)
        order.reserveCapacity(rowCount)
        for i in 0..<n {
            let ref = Int(itemRefs[i])
            if ref >= 0 {
                order.append(UInt32(ref))
            } else {
                for row in groups.rows(of: ~ref) { order.append(UInt32(row)) }
            }
            rowStart[i + 1] = UInt32(order.count)
        }
        for k in 0..<ranges.count { ranges[k] = rowStart[Int(ranges[k])] }
        for node in 0..<nodeCount { nodes[node].size = ranges[2 * node + 1] - ranges[2 * node] }
        itemXY = []
        itemIDs = []
        itemWeights = []
        itemRefs = []
    }

    /// Writes a node numbered `nodeCount` (children are therefore numbered after their parent and
    /// next to each other) and returns it with its covariance.
    private mutating func makeNode(
        start: Int, end: Int, depth: Int, parent: Int, moments m: Moments, origin: (x: Double, y: Double)
    ) -> Pending {
        let node = nodeCount
        nodeCount += 1
        let weight = m.weight
        let meanX = m.sx / weight
        let meanY = m.sy / weight
        // Size counts items until the build ends, then rows (see expandItems).
        nodes[node] = PCANode(
            minX: m.minX, minY: m.minY, maxX: m.maxX, maxY: m.maxY, firstChild: -1, parent: Int32(parent),
            size: UInt32(end - start), minID: m.minID)
        centroids[2 * node] = origin.x + meanX  // count-weighted centroid x
        centroids[2 * node + 1] = origin.y + meanY  // count-weighted centroid y
        ranges[2 * node] = UInt32(start)  // first item; a row position once the build ends
        ranges[2 * node + 1] = UInt32(end)  // one past the last
        depths[node] = UInt16(depth)
        return Pending(
            node: node, cxx: m.sxx / weight - meanX * meanX, cxy: m.sxy / weight - meanX * meanY,
            cyy: m.syy / weight - meanY * meanY)
    }

    /// The eigenvector of the largest eigenvalue of the symmetric matrix [[cxx, cxy], [cxy, cyy]],
    /// unnormalised (only the sign of projections on it matters).
    static func principalAxis(cxx: Double, cxy: Double, cyy: Double) -> (x: Double, y: Double) {
        if cxy == 0 { return cxx >= cyy ? (1, 0) : (0, 1) }
        let half = (cxx - cyy) / 2
        let lambda = (cxx + cyy) / 2 + (half * half + cxy * cxy).squareRoot()
        // Of the two equivalent forms, take the one whose leading term cannot cancel.
        return cxx >= cyy ? (lambda - cyy, cxy) : (cxy, lambda - cxx)
    }

    /// The moments of the items in `range` about `origin`.
    private func moments(of range: Range<Int>, about origin: (x: Double, y: Double)) -> Moments {
        var m = Moments()
        for i in range {
            let x = itemXY[2 * i]
            let y = itemXY[2 * i + 1]
            m.add(x: x, y: y, dx: x - origin.x, dy: y - origin.y, id: itemIDs[i], weight: itemWeights[i])
        }
        return m
    }

    /// Hoare partition of the items in `range` by the sign of their projection on `axis` around
    /// `mean` (≤ 0 goes first), accumulating both sides' moments about `mean` as each item is
    /// classified.
    /// - Returns: where the second side starts, and the moments of both sides.
    private mutating func partition(
        _ range: Range<Int>, mean: (x: Double, y: Double), axis: (x: Double, y: Double)
    ) -> (mid: Int, left: Moments, right: Moments) {
        itemXY.withUnsafeMutableBufferPointer { xy in
            itemIDs.withUnsafeMutableBufferPointer { ids in
                itemWeights.withUnsafeMutableBufferPointer { weights in
                    itemRefs.withUnsafeMutableBufferPointer { refs in
                        PCATreeBuilder.partition(
                            range, mean: mean, axis: axis, xy: xy, ids: ids, weights: weights, refs: refs)
                    }
                }
            }
        }
    }

    /// The partition loop proper, in a function of its own so its counters and moments are plain
    /// locals (kept in registers) rather than variables captured by the closures above.
    private static func partition(
        _ range: Range<Int>, mean: (x: Double, y: Double), axis: (x: Double, y: Double),
        xy: UnsafeMutableBufferPointer<Double>, ids: UnsafeMutableBufferPointer<UInt32>,
        weights: UnsafeMutableBufferPointer<UInt32>, refs: UnsafeMutableBufferPointer<Int32>
    ) -> (mid: Int, left: Moments, right: Moments) {
        var left = Moments()
        var right = Moments()
        var i = range.lowerBound
        var j = range.upperBound - 1
        var dx = 0.0
        var dy = 0.0
        while true {
            while i <= j {
                dx = xy[2 * i] - mean.x
                dy = xy[2 * i + 1] - mean.y
                if dx * axis.x + dy * axis.y > 0 { break }
                left.add(x: xy[2 * i], y: xy[2 * i + 1], dx: dx, dy: dy, id: ids[i], weight: weights[i])
                i += 1
            }
            if i > j { break }
            // Item i belongs to the second side; find a first-side item to swap it with.
            let (ix, iy) = (dx, dy)
            while j > i {
                dx = xy[2 * j] - mean.x
                dy = xy[2 * j + 1] - mean.y
                if dx * axis.x + dy * axis.y <= 0 { break }
                right.add(x: xy[2 * j], y: xy[2 * j + 1], dx: dx, dy: dy, id: ids[j], weight: weights[j])
                j -= 1
            }
            if j == i {
                right.add(x: xy[2 * i], y: xy[2 * i + 1], dx: ix, dy: iy, id: ids[i], weight: weights[i])
                break
            }
            let (xi, yi, xj, yj) = (xy[2 * i], xy[2 * i + 1], xy[2 * j], xy[2 * j + 1])
            let (idI, idJ, wI, wJ) = (ids[i], ids[j], weights[i], weights[j])
            (xy[2 * i], xy[2 * i + 1], xy[2 * j], xy[2 * j + 1]) = (xj, yj, xi, yi)
            (ids[i], ids[j], weights[i], weights[j]) = (idJ, idI, wJ, wI)
            (refs[i], refs[j]) = (refs[j], refs[i])
            left.add(x: xj, y: yj, dx: dx, dy: dy, id: idJ, weight: wJ)
            right.add(x: xi, y: yi, dx: ix, dy: iy, id: idI, weight: wI)
            i += 1
            j -= 1
        }
        return (i, left, right)
    }
}

/// Weight, weighted first and second moments about an origin, bounding box and smallest id of a set
/// of items.
struct Moments {
    var weight = 0.0
    var sx = 0.0
    var sy = 0.0
    var sxx = 0.0
    var sxy = 0.0
    var syy = 0.0
    var minX = Double.infinity
    var minY = Double.infinity
    var maxX = -Double.infinity
    var maxY = -Double.infinity
    var minID = UInt32.max

    /// Adds an item at (x, y), which is (dx, dy) from the origin the moments are taken about.
    @inline(__always) mutating func add(x: Double, y: Double, dx: Double, dy: Double, id: UInt32, weight w: UInt32) {
        let w = Double(w)
        weight += w
        sx += w * dx
        sy += w * dy
        sxx += w * dx * dx
        sxy += w * dx * dy
        syy += w * dy * dy
        // The box is kept in absolute coordinates: x - origin + origin need not round back to x.
        minX = min(minX, x)
        minY = min(minY, y)
        maxX = max(maxX, x)
        maxY = max(maxY, y)
        minID = min(minID, id)
    }
}
