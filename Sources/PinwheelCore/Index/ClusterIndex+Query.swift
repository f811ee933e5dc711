import Foundation

/// Viewport queries: a scan of one zoom's cell-key order, emitting clusters, points and spread groups.
extension ClusterIndex {
    public func features(in bbox: BBox, zoom: Double, into out: inout [Feature]) {
        out.removeAll(keepingCapacity: true)
        guard dataset.count > 0 else { return }
        withContext(zoom: zoom) { context in
            if bbox.crossesAntimeridian {
                let minY = Mercator.y(lat: bbox.north)
                let maxY = Mercator.y(lat: bbox.south)
                let west = MercatorRect(minX: Mercator.x(lon: bbox.west), minY: minY, maxX: 1, maxY: maxY)
                let east = MercatorRect(minX: 0, minY: minY, maxX: Mercator.x(lon: bbox.east), maxY: maxY)
                scan(context, rect: west, into: &out)
                scan(context, rect: east, into: &out)
            } else {
                scan(context, rect: MercatorRect(spanning: bbox), into: &out)
            }
        }
    }

    /// Appends the features of every item of the context's level inside a rectangle.
    ///
    /// Items are in cell-key order, so the rectangle's cells form one run per grid row, read by
    /// ``LevelView/forEachItem(row:columns:_:)``.
    /// - Complexity: O(r · log g + k) for r grid rows, cell-directory groups of g items, and k items in
    ///   the cells read.
    func scan(_ context: QueryContext, rect: MercatorRect, into out: inout [Feature]) {
        let level = context.level
        guard level.meta.count > 0, rect.minX <= rect.maxX, rect.minY <= rect.maxY else { return }
        let (rows, columns) = level.cells(of: rect)
        var scratch = SpreadScratch()
        for row in rows {
            level.forEachItem(row: row, columns: columns) { i in
                if rect.contains(x: level.xy[2 * i], y: level.xy[2 * i + 1]) {
                    emit(context, item: i, scratch: &scratch, into: &out)
                }
            }
        }
    }

    /// One zoom's arrays as buffer pointers, so the per-item work of a query copies no arrays.
    struct LevelView {
        let gridBits: Int
        let xy: UnsafeBufferPointer<Double>
        let meta: UnsafeBufferPointer<UInt64>
        let parents: UnsafeBufferPointer<Int32>
        /// Where runs of the level's cells start.
        let cells: CellDirectory

        /// The grid rows and columns a rectangle's cells span.
        func cells(of rect: MercatorRect) -> (rows: ClosedRange<Int>, columns: ClosedRange<Int>) {
            let side = 1 << gridBits
            let scale = Double(side)
            func cell(_ v: Double) -> Int { max(0, min(Int(v * scale), side - 1)) }
            return (cell(rect.minY)...cell(rect.maxY), cell(rect.minX)...cell(rect.maxX))
        }
    }

    /// Everything a query reads, as buffer pointers: its level, the level above (for parents) and the
    /// dataset.
    struct QueryContext {
        let levelIndex: Int
        let level: LevelView
        let above: LevelView?
        let ids: UnsafeBufferPointer<UInt32>
        let coordinates: UnsafeBufferPointer<Double>
        /// The zoom spread pins are laid out for.
        let spreadZoom: Double
        /// True beyond `maxZoom + 1`, where the zoom above shows the same raw features: each is its own
        /// parent.
        let ownParents: Bool
    }

    /// Runs `body` with the ``QueryContext`` of a map zoom.
    func withContext<R>(zoom: Double, _ body: (QueryContext) -> R) -> R {
        withContext(
            level: levelIndex(zoom: zoom), spreadZoom: ClusterIndex.spreadZoom(zoom), ownParents: isBeyondRaw(zoom),
            body)
    }

    /// True beyond `maxZoom + 1`, where the zoom above shows the same raw features.
    func isBeyondRaw(_ zoom: Double) -> Bool {
        zoom.isFinite && floor(zoom) > Double(options.maxZoom + 1)
    }

    /// Runs `body` with a ``QueryContext`` for level `li`.
    func withContext<R>(level li: Int, spreadZoom: Double, ownParents: Bool = false, _ body: (QueryContext) -> R)
        -> R
    {
        withView(level: li) { level in
            withView(level: max(li - 1, 0)) { above in
                dataset.ids.withUnsafeBufferPointer { ids in
                    dataset.coordinates.withUnsafeBufferPointer { coordinates in
                        body(
                            QueryContext(
                                levelIndex: li, level: level, above: li > 0 ? above : nil, ids: ids,
                                coordinates: coordinates, spreadZoom: spreadZoom, ownParents: ownParents))
                    }
                }
            }
        }
    }

    /// Runs `body` with level `li`'s ``LevelView``.
    func withView<R>(level li: Int, _ body: (LevelView) -> R) -> R {
        let level = levels[li]
        return level.xy.withUnsafeBufferPointer { xy in
            level.meta.withUnsafeBufferPointer { meta in
                level.parents.withUnsafeBufferPointer { parents in
                    body(LevelView(gridBits: level.gridBits, xy: xy, meta: meta, parents: parents, cells: cells[li]))
                }
            }
        }
    }

    /// Per-query room for spread positions, allocated only when a group is in view.
    struct SpreadScratch {
        var positions: [Coordinate] = []
    }

    /// Appends the feature(s) item i of the context's level stands for: a cluster, a point, or a
    /// same-coordinate group's spread members.
    func emit(_ context: QueryContext, item i: Int, scratch: inout SpreadScratch, into out: inout [Feature]) {
        let level = context.level
        let meta = level.meta[i]
        var parent: FeatureID?
        var membersAreOwnParents = context.ownParents
        if context.ownParents {
            parent = ClusterIndex.identity(meta, ids: context.ids).id
        } else if let above = context.above {
            let (aboveID, aboveIsGroup) = ClusterIndex.identity(above.meta[Int(level.parents[i])], ids: context.ids)
            parent = aboveID
            // A group whose parent is a group is the same group passed through: there its members are
            // shown spread too, each its own parent.
            membersAreOwnParents = aboveIsGroup
        }
        let payload = Int(ItemMeta.payload(meta))
        switch ItemMeta.tag(meta) {
        case 0:
            out.append(
                Feature(
                    id: FeatureID(context.ids[payload]), lat: context.coordinates[2 * payload + 1],
                    lon: context.coordinates[2 * payload], count: 1, parent: parent, row: Int32(payload)))
        case ItemMeta.groupTag:
            appendSpread(
                group: payload, zoom: context.spreadZoom, parent: parent, membersAreOwnParents: membersAreOwnParents,
                scratch: &scratch, into: &out)
        case let tag:
            out.append(
                Feature(
                    id: tag << 32 | UInt64(payload), lat: Mercator.lat(y: level.xy[2 * i + 1]),
                    lon: Mercator.lon(x: level.xy[2 * i]), count: ItemMeta.count(meta), parent: parent, row: -1,
                    slot: Int32(context.levelIndex << 26 | i)))
        }
    }

    /// Appends the ids of the feature(s) item i of the context's level stands for, as ``emit(_:item:scratch:into:)``
    /// would: without their positions or parents, which a leaving feature does not need.
    func emitIDs(_ context: QueryContext, item i: Int, into out: inout [FeatureID]) {
        let meta = context.level.meta[i]
        let payload = Int(ItemMeta.payload(meta))
        switch ItemMeta.tag(meta) {
        case 0: out.append(FeatureID(context.ids[payload]))
        case ItemMeta.groupTag: for row in groups.rows(of: payload) { out.append(FeatureID(context.ids[Int(row)])) }
        case let tag: out.append(tag << 32 | UInt64(payload))
        }
    }

    /// Appends group g's members spread for a zoom, each with `parent`, or its own id as parent.
    func appendSpread(
        group g: Int, zoom: Double, parent: FeatureID?, membersAreOwnParents: Bool, scratch: inout SpreadScratch,
        into out: inout [Feature]
    ) {
        let members = groups.rows(of: g)
        placement.place(around: groups.centers[g], count: members.count, zoom: zoom, into: &scratch.positions)
        for (k, row32) in members.enumerated() {
            let row = Int(row32)
            let id = FeatureID(dataset.ids[row])
            let at = scratch.positions[k]
            out.append(
                Feature(
                    id: id, lat: at.lat, lon: at.lon, count: 1, parent: membersAreOwnParents ? id : parent,
                    anchor: Coordinate(lat: dataset.lat(row), lon: dataset.lon(row)), row: Int32(row)))
        }
    }
}
