import Foundation

extension PCATree {
    /// Viewport, in pixels, for which ``expansion(of:zoom:)`` reports the zoom at which a node splits.
    public static let typicalViewport = (width: 1280.0, height: 800.0)
    /// Pixels per tile edge of that viewport's map (Leaflet's 256).
    public static let typicalTileSize = 256.0
    /// Highest zoom ``expansion(of:zoom:)`` reports (the protocol's limit).
    public static let maxExpansionZoom = 24

    /// The node's two children (a group's members, at their true positions), each with the node as
    /// its parent; nil for an id that is no node of this tree. A point has no children.
    /// - Complexity: O(depth + members).
    public func children(of id: FeatureID) -> [Feature]? {
        if let row = pointRow(of: id) { return row >= 0 ? [] : nil }
        guard let node = node(of: id) else { return nil }
        let child = Int(nodes[node].firstChild)
        if child >= 0 { return [feature(node: child), feature(node: child + 1)] }
        let start = Int(ranges[2 * node])
        return (start..<start + size(of: node)).map { pointFeature(row: Int(order[$0]), parent: id) }
    }

    /// The points under a node in tree order (a group's in id order), each with the node one level
    /// above its own leaf as parent; a point's leaves are the point itself. Nil for an unknown id.
    /// - Parameters:
    ///   - id: a node or point id.
    ///   - limit: most points returned.
    ///   - offset: points skipped first.
    /// - Complexity: O(limit · depth + log n).
    public func leaves(of id: FeatureID, limit: Int, offset: Int) -> [Feature]? {
        if let row = pointRow(of: id) {
            guard row >= 0 else { return nil }
            guard offset == 0 && limit > 0 else { return [] }
            return [pointFeature(row: row, parent: parentOfPoint(at: Int(position[row])))]
        }
        guard let node = node(of: id) else { return nil }
        let start = Int(ranges[2 * node])
        let end = Int(ranges[2 * node + 1])
        let first = start + min(max(offset, 0), end - start)
        let last = first + min(max(limit, 0), end - first)
        return (first..<last).map { pointFeature(row: Int(order[$0]), parent: parentOfPoint(at: $0, from: node)) }
    }

    /// How to open a feature: a same-coordinate group (or any of its members) yields its members spread
    /// for `zoom`; a cluster yields the smallest integer zoom at which a ``typicalViewport`` centred on
    /// it no longer shows it whole, but at least the integer zoom after `zoom` (a map larger than the
    /// typical one can still show a cluster whole past that zoom, and expanding should always zoom
    /// in), and at most ``maxExpansionZoom``; a lone point yields `zoom` itself. Nil for an unknown id.
    /// - Complexity: O(log(maxExpansionZoom) · maxClusters · depth) for a cluster.
    public func expansion(of id: FeatureID, zoom: Double) -> Expansion? {
        var node: Int
        if let row = pointRow(of: id) {
            guard row >= 0 else { return nil }
            node = leaf(containing: Int(position[row]))
            if size(of: node) == 1 { return .zoom(zoom) }
        } else {
            guard let found = self.node(of: id) else { return nil }
            node = found
        }
        if nodes[node].firstChild < 0 { return .spread(spread(group: node, zoom: zoom)) }
        let next = zoom.isFinite ? Int(max(0, min(floor(zoom) + 1, Double(PCATree.maxExpansionZoom)))) : 0
        return .zoom(Double(max(splitZoom(of: node), next)))
    }

    /// Reduced ``aggregates``: a node's, or a point's own values.
    public func aggregateValues(of feature: Feature) -> ArraySlice<Double> {
        let k = aggregates.count
        if feature.row >= 0 {
            let row = Int(feature.row)
            return pointValues[row * k..<row * k + k]
        }
        guard feature.slot >= 0 && Int(feature.slot) < nodeCount else { return [] }
        let node = Int(feature.slot)
        return nodeValues[node * k..<node * k + k]
    }

    /// The smallest integer zoom at which the typical viewport centred on the node's centroid opens it.
    /// Zooming in around a fixed centre only shrinks the viewport, and a cut only ever opens more of
    /// the tree as the viewport shrinks, so the answer is found by bisection.
    func splitZoom(of node: Int) -> Int {
        var low = 0
        var high = PCATree.maxExpansionZoom
        var rects: [MercatorRect] = []
        withUnsafeTemporaryAllocation(of: Int32.self, capacity: cutBufferCapacity) { buffer in
            while low < high {
                let zoom = (low + high) / 2
                viewportRects(around: node, zoom: zoom, into: &rects)
                let cut = cut(meeting: rects, zoom: Double(zoom), into: buffer)
                if buffer[cut].contains(Int32(node)) { low = zoom + 1 } else { high = zoom }
            }
        }
        return low
    }

    /// The typical viewport centred on a node's centroid at a zoom, clipped to the Mercator square
    /// vertically and wrapped across the antimeridian.
    private func viewportRects(around node: Int, zoom: Int, into rects: inout [MercatorRect]) {
        rects.removeAll(keepingCapacity: true)
        let worldPixels = PCATree.typicalTileSize * Double(1 << zoom)
        let halfWidth = min(0.5, PCATree.typicalViewport.width / worldPixels / 2)
        let halfHeight = PCATree.typicalViewport.height / worldPixels / 2
        let x = centroids[2 * node]
        let y = centroids[2 * node + 1]
        let minY = max(0, y - halfHeight)
        let maxY = min(1, y + halfHeight)
        let west = x - halfWidth
        let east = x + halfWidth
        if west < 0 {
            rects.append(MercatorRect(minX: west + 1, minY: minY, maxX: 1, maxY: maxY))
            rects.append(MercatorRect(minX: 0, minY: minY, maxX: east, maxY: maxY))
        } else if east > 1 {
            rects.append(MercatorRect(minX: west, minY: minY, maxX: 1, maxY: maxY))
            rects.append(MercatorRect(minX: 0, minY: minY, maxX: east - 1, maxY: maxY))
        } else {
            rects.append(MercatorRect(minX: west, minY: minY, maxX: east, maxY: maxY))
        }
    }

    /// For a point id (below 2^32): its row, or -1 when no point has it. Nil for a node id.
    private func pointRow(of id: FeatureID) -> Int? {
        guard id >> 32 == 0 else { return nil }
        return lookup.row(of: UInt32(id)) ?? -1
    }

    /// The node a node id names, or nil: its depth and smallest point id lead from the root to it.
    /// - Complexity: O(depth + log n).
    func node(of id: FeatureID) -> Int? {
        let high = id >> 32
        guard high >= 32, high - 32 <= FeatureID(UInt16.max), nodeCount > 0,
            let row = lookup.row(of: UInt32(truncatingIfNeeded: id))
        else { return nil }
        let depth = Int(high - 32)
        let target = Int(position[row])
        var node = 0
        while Int(depths[node]) < depth {
            let child = Int(nodes[node].firstChild)
            guard child >= 0 else { return nil }
            node = target < Int(ranges[2 * child + 1]) ? child : child + 1
        }
        guard size(of: node) > 1, wireID(node) == id else { return nil }
        return node
    }

    /// The id of the node one level above the point at `position` in ``order``: its group, or the
    /// parent of its one-point leaf.
    func parentOfPoint(at position: Int, from node: Int = 0) -> FeatureID {
        let leaf = leaf(containing: position, from: node)
        return size(of: leaf) > 1 ? wireID(leaf) : parentID(leaf)
    }

    /// The leaf whose run holds `position`, searched from `node` down.
    /// - Complexity: O(depth).
    func leaf(containing position: Int, from node: Int = 0) -> Int {
        var node = node
        while true {
            let child = Int(nodes[node].firstChild)
            if child < 0 { return node }
            node = position < Int(ranges[2 * child + 1]) ? child : child + 1
        }
    }
}

extension PCATree {
    /// A node's counts: its run of ``order``, tallied.
    public func addContents(of feature: Feature, to counts: inout [Int32]) {
        guard let tally, !feature.isPoint, feature.slot >= 0 && Int(feature.slot) < nodeCount else { return }
        let node = Int(feature.slot)
        tally.add(run: Int(ranges[2 * node])..<Int(ranges[2 * node + 1]), to: &counts)
    }
}
