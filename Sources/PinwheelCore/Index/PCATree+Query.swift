import Foundation

extension PCATree {
    /// The features to draw for a viewport: the tree cut to at most ``ClusterOptions/maxClusters`` features
    /// (see ``cut(meeting:zoom:into:)`` for the rule).
    /// - Parameters:
    ///   - bbox: the viewport, possibly crossing the antimeridian.
    ///   - zoom: map zoom, fractional allowed: keeps clusters narrower than `radius` pixels closed and
    ///     lays out spread groups.
    ///   - out: receives the features; cleared first, capacity kept.
    /// - Complexity: O(maxClusters · depth) node visits, whatever the dataset size (two cuts: this
    ///   view, and the same view one zoom out, which names each feature's `parent`).
    public func features(in bbox: BBox, zoom: Double, into out: inout [Feature]) {
        out.removeAll(keepingCapacity: true)
        guard nodeCount > 0 else { return }
        var rects: [MercatorRect] = []
        rects.reserveCapacity(2)
        _ = bbox.mercatorRects(into: &rects)
        let coarser = PCATree.zoomedOut(rects)
        let capacity = cutBufferCapacity
        withUnsafeTemporaryAllocation(of: Int32.self, capacity: 2 * capacity) { buffer in
            let fine = UnsafeMutableBufferPointer(rebasing: buffer[0..<capacity])
            let coarse = UnsafeMutableBufferPointer(rebasing: buffer[capacity..<2 * capacity])
            let found = cut(meeting: rects, zoom: zoom, into: fine)
            // What the same view one zoom out shows: every feature here descends from one of those.
            let above = cut(meeting: coarser, zoom: zoom - 1, into: coarse)
            var seen = UnsafeMutableBufferPointer(rebasing: coarse[above])
            seen.sort()
            for entry in fine[found] {
                if entry >= 0 {
                    var feature = feature(node: Int(entry))
                    feature.parent = holder(of: Int(entry), in: seen).map(wireID) ?? feature.id
                    out.append(feature)
                    continue
                }
                let group = Int(~entry)
                let start = out.count
                out.append(contentsOf: spread(group: group, zoom: zoom))
                // Members spread one zoom out too are their own parents; otherwise they came out of
                // the group's cluster, or of whatever held the group there.
                let spreadAbove = PCATree.contains(seen, entry)
                let parent = spreadAbove ? nil : wireID(holder(of: group, in: seen) ?? group)
                for i in start..<out.count { out[i].parent = parent ?? out[i].id }
            }
        }
    }

    /// The node of `seen` (a sorted cut) that holds `node`: its nearest ancestor in the cut, or nil
    /// when the node itself is there (drawn unchanged one zoom out, it is its own parent).
    /// - Complexity: O(levels climbed · log maxClusters).
    private func holder(of node: Int, in seen: UnsafeMutableBufferPointer<Int32>) -> Int? {
        var k = node
        while k >= 0 {
            if PCATree.contains(seen, Int32(k)) || PCATree.contains(seen, ~Int32(k)) { return k == node ? nil : k }
            k = Int(nodes[k].parent)
        }
        // Unreachable: a viewport one zoom out holds an ancestor-or-self of everything a smaller one
        // shows. The tree parent is the honest fallback.
        let parent = Int(nodes[node].parent)
        return parent >= 0 ? parent : nil
    }

    /// Binary search of a sorted buffer.
    private static func contains(_ sorted: UnsafeMutableBufferPointer<Int32>, _ value: Int32) -> Bool {
        var low = 0
        var high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if sorted[mid] < value { low = mid + 1 } else { high = mid }
        }
        return low < sorted.count && sorted[low] == value
    }

    /// The same view one zoom out: the viewport's rectangles grown about their centre to twice the
    /// width and height, clipped vertically and wrapped across the antimeridian.
    static func zoomedOut(_ rects: [MercatorRect]) -> [MercatorRect] {
        guard let first = rects.first else { return rects }
        // Across the antimeridian the two rectangles are one span from the first's west edge.
        let west = first.minX
        let east = rects.count == 2 ? rects[1].maxX + 1 : first.maxX
        let width = east - west
        let height = first.maxY - first.minY
        let minY = max(0, first.minY - height / 2)
        let maxY = min(1, first.maxY + height / 2)
        let left = west - width / 2
        let right = east + width / 2
        if right - left >= 1 { return [MercatorRect(minX: 0, minY: minY, maxX: 1, maxY: maxY)] }
        if left < 0 {
            return [
                MercatorRect(minX: left + 1, minY: minY, maxX: 1, maxY: maxY),
                MercatorRect(minX: 0, minY: minY, maxX: right, maxY: maxY),
            ]
        }
        if right > 1 {
            return [
                MercatorRect(minX: left, minY: minY, maxX: 1, maxY: maxY),
                MercatorRect(minX: 0, minY: minY, maxX: right - 1, maxY: maxY),
            ]
        }
        return [MercatorRect(minX: left, minY: minY, maxX: right, maxY: maxY)]
    }

    /// Scratch entries ``cut(meeting:zoom:into:)`` needs: the current cut, the next one and candidates.
    var cutBufferCapacity: Int { 3 * (options.maxClusters + 1) }

    /// Cuts the tree for a viewport at a zoom.
    ///
    /// First by count alone, breadth first from the root, over nodes whose box meets the viewport:
    /// while the cut holds an internal node, every internal node in it is replaced by its children
    /// that meet the viewport. When a whole level would exceed `maxClusters`, the level's nodes are
    /// opened one at a time in a fixed order (most points first, then smallest id) until the next one
    /// would not fit. Only when no internal node is left are same-coordinate groups opened into their
    /// members, smallest group first, while they fit. Then by size: a node whose box is at most
    /// `radius` pixels wide and tall at `zoom` (on `extent`-pixel tiles) stays closed, so everything
    /// the count opened beneath it folds back into it; above `maxZoom` nothing is too small.
    ///
    /// The order never depends on the viewport, a smaller viewport opens every node a larger one did,
    /// and a higher zoom finds every node at least as wide: zooming in only ever replaces nodes by
    /// their descendants, and the size rule only merges, so the count limit holds.
    /// - Parameters:
    ///   - rects: the viewport in Mercator units (two rectangles across the antimeridian).
    ///   - zoom: the map zoom.
    ///   - buffer: scratch of at least ``cutBufferCapacity`` entries.
    /// - Returns: where in `buffer` the cut is; an entry `k ≥ 0` is node k drawn as one feature, an
    ///   entry `~k` is the group leaf k drawn as its spread members.
    /// - Complexity: O(maxClusters · depth).
    func cut(meeting rects: [MercatorRect], zoom: Double, into buffer: UnsafeMutableBufferPointer<Int32>)
        -> Range<Int>
    {
        let counted = cutByCount(meeting: rects, into: buffer)
        // Nodes no wider than this, in Mercator units, stay closed.
        let closedBelow =
            zoom >= Double(options.maxZoom + 1) ? -1 : options.radius / (options.extent * pow(2, max(0, zoom)))
        var written = counted.lowerBound
        for p in counted {
            var entry = buffer[p]
            let node = Int(entry >= 0 ? entry : ~entry)
            var top = node
            while nodes[top].parent >= 0 && nodes[Int(nodes[top].parent)].width <= closedBelow {
                top = Int(nodes[top].parent)
            }
            if top != node { entry = Int32(top) }
            // A closed node's descendants are next to each other in the cut, so it appears once.
            if written > counted.lowerBound && buffer[written - 1] == entry { continue }
            buffer[written] = entry
            written += 1
        }
        return counted.lowerBound..<written
    }

    /// The cut by count alone; see ``cut(meeting:zoom:into:)``.
    private func cutByCount(meeting rects: [MercatorRect], into buffer: UnsafeMutableBufferPointer<Int32>)
        -> Range<Int>
    {
        let limit = options.maxClusters
        guard nodeCount > 0, meets(0, rects) else { return 0..<0 }
        var current = 0
        var next = limit + 1
        let candidates = 2 * (limit + 1)
        buffer[current] = 0
        var count = 1
        while true {
            var nextCount = 0
            var inner = 0
            var overflow = false
            scan: for p in 0..<count {
                let node = Int(buffer[current + p])
                let child = Int(nodes[node].firstChild)
                if child < 0 {
                    // Leaves stay; the cut only ever shrinks or grows through internal nodes.
                    if nextCount == limit {
                        overflow = true
                        break scan
                    }
                    buffer[next + nextCount] = Int32(node)
                    nextCount += 1
                    continue
                }
                inner += 1
                for c in child...child + 1 where meets(c, rects) {
                    if nextCount == limit {
                        overflow = true
                        break scan
                    }
                    buffer[next + nextCount] = Int32(c)
                    nextCount += 1
                }
            }
            if inner == 0 {
                mark(.groups, in: buffer, at: current, count: count, candidates: candidates, rects: rects)
                return current..<current + count
            }
            if overflow {
                let total = openPartially(
                    in: buffer, at: current, count: count, into: next, candidates: candidates, rects: rects)
                return next..<next + total
            }
            swap(&current, &next)
            count = nextCount
        }
    }

    /// Opens the internal nodes of the cut at `buffer[at..<at + count]` one by one, most points first,
    /// while the cut stays within the limit, and writes the resulting cut at `into`.
    /// - Returns: the size of the resulting cut.
    private func openPartially(
        in buffer: UnsafeMutableBufferPointer<Int32>, at current: Int, count: Int, into next: Int,
        candidates: Int, rects: [MercatorRect]
    ) -> Int {
        mark(.internalNodes, in: buffer, at: current, count: count, candidates: candidates, rects: rects)
        var written = 0
        for p in current..<current + count {
            let entry = buffer[p]
            if entry >= 0 {
                buffer[next + written] = entry
                written += 1
                continue
            }
            let child = Int(nodes[Int(~entry)].firstChild)
            for c in child...child + 1 where meets(c, rects) {
                buffer[next + written] = Int32(c)
                written += 1
            }
        }
        return written
    }

    /// What ``mark(_:in:at:count:candidates:rects:)`` opens.
    private enum Opening {
        /// Internal nodes, into their children that meet the viewport; most points first.
        case internalNodes
        /// Same-coordinate groups, into their spread members; smallest first.
        case groups
    }

    /// Marks as `~k`, in a fixed order, the nodes of one kind in the cut at `buffer[at..<at + count]`
    /// while the features drawn stay within the limit; stops at the first that does not fit, which is
    /// what keeps the rule monotone as the viewport shrinks.
    private func mark(
        _ opening: Opening, in buffer: UnsafeMutableBufferPointer<Int32>, at current: Int, count: Int,
        candidates: Int, rects: [MercatorRect]
    ) {
        var found = 0
        for p in 0..<count {
            let node = Int(buffer[current + p])
            let eligible = opening == .internalNodes ? nodes[node].firstChild >= 0 : nodes[node].size > 1
            if eligible {
                buffer[candidates + found] = Int32(p)
                found += 1
            }
        }
        sortCandidates(buffer, at: candidates, count: found, current: current, largestFirst: opening == .internalNodes)
        var total = count
        for i in 0..<found {
            let p = current + Int(buffer[candidates + i])
            let node = Int(buffer[p])
            let added: Int
            if opening == .internalNodes {
                let child = Int(nodes[node].firstChild)
                added = (meets(child, rects) ? 1 : 0) + (meets(child + 1, rects) ? 1 : 0)
            } else {
                added = size(of: node)
            }
            if total - 1 + added > options.maxClusters { break }
            total += added - 1
            buffer[p] = ~Int32(node)
        }
    }

    /// Insertion sort of candidate positions (at most `maxClusters`) by the size of their node, then
    /// by smallest id, so the order depends on the nodes only.
    private func sortCandidates(
        _ buffer: UnsafeMutableBufferPointer<Int32>, at start: Int, count: Int, current: Int, largestFirst: Bool
    ) {
        guard count > 1 else { return }
        for i in start + 1..<start + count {
            let moving = buffer[i]
            let node = Int(buffer[current + Int(moving)])
            var j = i
            while j > start {
                let other = Int(buffer[current + Int(buffer[j - 1])])
                let (a, b) = (size(of: node), size(of: other))
                let before = a != b ? (largestFirst ? a > b : a < b) : nodes[node].minID < nodes[other].minID
                if !before { break }
                buffer[j] = buffer[j - 1]
                j -= 1
            }
            buffer[j] = moving
        }
    }

    /// Points under a node.
    @inline(__always) func size(of node: Int) -> Int {
        Int(nodes[node].size)
    }

    /// Whether a node's box meets any of the viewport rectangles (edges included).
    @inline(__always) func meets(_ node: Int, _ rects: [MercatorRect]) -> Bool {
        nodes[node].meets(rects)
    }

    /// The wire id of a node: the point's own id for a one-point leaf.
    func wireID(_ node: Int) -> FeatureID {
        if size(of: node) == 1 { return FeatureID(dataset.ids[Int(order[Int(ranges[2 * node])])]) }
        return PCATree.nodeID(depth: Int(depths[node]), minID: nodes[node].minID)
    }

    /// The wire id of the node one level up, or the node's own at the root.
    func parentID(_ node: Int) -> FeatureID {
        let parent = Int(nodes[node].parent)
        return parent < 0 ? wireID(node) : wireID(parent)
    }

    /// A node drawn as one feature: the point itself for a one-point leaf, otherwise a cluster at the
    /// count-weighted centroid (a same-coordinate group exactly at its shared point).
    func feature(node: Int) -> Feature {
        let start = Int(ranges[2 * node])
        let count = size(of: node)
        if count == 1 { return pointFeature(row: Int(order[start]), parent: parentID(node)) }
        let lat: Double
        let lon: Double
        let group = nodes[node].firstChild < 0 ? Int(groupOfRow[Int(order[start])]) : -1
        if group >= 0 {
            lat = groups.centers[group].lat
            lon = groups.centers[group].lon
        } else {
            lat = Mercator.lat(y: centroids[2 * node + 1])
            lon = Mercator.lon(x: centroids[2 * node])
        }
        return Feature(
            id: wireID(node), lat: lat, lon: lon, count: UInt32(count), parent: parentID(node), row: -1,
            slot: Int32(node))
    }

    /// A single point at its true position.
    func pointFeature(row: Int, parent: FeatureID) -> Feature {
        Feature(
            id: FeatureID(dataset.ids[row]), lat: dataset.lat(row), lon: dataset.lon(row), count: 1, parent: parent,
            row: Int32(row))
    }

    /// The members of group leaf `node`, spread for `zoom`, each anchored at its true position and
    /// parented to the group.
    func spread(group node: Int, zoom: Double) -> [Feature] {
        let start = Int(ranges[2 * node])
        let count = size(of: node)
        let group = Int(groupOfRow[Int(order[start])])
        var positions: [Coordinate] = []
        // Laid out for the floor of the zoom, as the hierarchical index does, so pins stay put while a
        // map zooms between integers.
        placement.place(
            around: groups.centers[group], count: count, zoom: ClusterIndex.spreadZoom(zoom), into: &positions)
        let parent = wireID(node)
        var members: [Feature] = []
        members.reserveCapacity(count)
        for i in 0..<count {
            let row = Int(order[start + i])
            var member = pointFeature(row: row, parent: parent)
            member.anchor = Coordinate(lat: member.lat, lon: member.lon)
            member.lat = positions[i].lat
            member.lon = positions[i].lon
            members.append(member)
        }
        return members
    }
}
