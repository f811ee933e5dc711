/// A pan or a zoom within one level, answered from the cells that enter and leave the view: a pan
/// by a tenth of the view's width reads two strips of a tenth each, where a whole query reads the
/// view. Views of one level of an index built whole differ only by whose items lie inside: an item
/// shows the same features (ids, positions, parents) in every view of its level.
extension ClusterIndex {
    public func viewMoved(
        from old: BBox, zoom oldZoom: Double, to new: BBox, zoom newZoom: Double, entering: inout [Feature],
        leaving: inout [FeatureID]
    ) -> Bool {
        entering.removeAll(keepingCapacity: true)
        leaving.removeAll(keepingCapacity: true)
        guard let (from, to) = movedRects(from: old, zoom: oldZoom, to: new, zoom: newZoom) else { return false }
        guard dataset.count > 0 else { return true }
        withContext(zoom: newZoom) { context in
            var scratch = SpreadScratch()
            scanMove(
                context, from: from, to: to,
                entering: { emit(context, item: $0, scratch: &scratch, into: &entering) },
                leaving: { emitIDs(context, item: $0, into: &leaving) })
        }
        return true
    }

    /// The rectangles of two views a move can be read between: nil when the view changed zoom level,
    /// spread zoom or side of the raw level, crosses the antimeridian, or jumped.
    func movedRects(from old: BBox, zoom oldZoom: Double, to new: BBox, zoom newZoom: Double) -> (
        from: MercatorRect, to: MercatorRect
    )? {
        // A query reads a zoom's level, lays spreads out for its floor, and past the raw level makes
        // each feature its own parent: zooms alike in all three show the same features.
        guard levelIndex(zoom: oldZoom) == levelIndex(zoom: newZoom),
            ClusterIndex.spreadZoom(oldZoom) == ClusterIndex.spreadZoom(newZoom),
            isBeyondRaw(oldZoom) == isBeyondRaw(newZoom)
        else { return nil }
        // Boxes across the antimeridian are two rectangles each: rare, and left to whole queries.
        guard !old.crossesAntimeridian, !new.crossesAntimeridian else { return nil }
        let (from, to) = (MercatorRect(spanning: old), MercatorRect(spanning: new))
        // A jump shares nothing with the view it leaves: a whole query reads less.
        guard from.minX <= to.maxX, to.minX <= from.maxX, from.minY <= to.maxY, to.minY <= from.maxY else {
            return nil
        }
        return (from, to)
    }

    /// Calls `entering` with the items inside `to` and not `from`, and `leaving` with those inside
    /// `from` and not `to`, reading each grid row once.
    ///
    /// Cells inside both rectangles' inner cells hold only items inside both (the grid's scale is a
    /// power of two, so a cell's bounds are exact): a row crossing them is read as the runs on either
    /// side. Each item read is tested against both rectangles.
    @inline(__always) func scanMove(
        _ context: QueryContext, from: MercatorRect, to: MercatorRect, entering: (Int) -> Void, leaving: (Int) -> Void
    ) {
        let level = context.level
        guard level.meta.count > 0 else { return }
        let (oldRows, oldColumns) = level.cells(of: from)
        let (newRows, newColumns) = level.cells(of: to)
        // Both rectangles' inner cells, as half-open ranges (possibly empty).
        func inner(_ a: ClosedRange<Int>, _ b: ClosedRange<Int>) -> Range<Int> {
            let lo = max(a.lowerBound, b.lowerBound) + 1
            return lo..<max(lo, min(a.upperBound, b.upperBound))
        }
        let innerRows = inner(oldRows, newRows)
        let innerColumns = inner(oldColumns, newColumns)
        // The rectangles overlap, so in a row both span their columns join into one run.
        let rows = min(oldRows.lowerBound, newRows.lowerBound)...max(oldRows.upperBound, newRows.upperBound)
        let joined =
            min(oldColumns.lowerBound, newColumns.lowerBound)...max(oldColumns.upperBound, newColumns.upperBound)
        func classify(_ i: Int) {
            let (x, y) = (level.xy[2 * i], level.xy[2 * i + 1])
            switch (from.contains(x: x, y: y), to.contains(x: x, y: y)) {
            case (false, true): entering(i)
            case (true, false): leaving(i)
            default: break
            }
        }
        withUnsafeTemporaryAllocation(of: LevelView.RunSearch.self, capacity: LevelView.runsSearchedTogether) {
            runs in
            var count = 0
            func read(_ row: Int, _ columns: ClosedRange<Int>) {
                runs[count] = level.search(row: row, columns: columns)
                count += 1
                if count == runs.count {
                    level.forEachItem(in: runs, classify)
                    count = 0
                }
            }
            for row in rows {
                let inOld = oldRows.contains(row)
                let inNew = newRows.contains(row)
                guard inOld || inNew else { continue }
                let columns = inOld && inNew ? joined : inOld ? oldColumns : newColumns
                if innerRows.contains(row) && !innerColumns.isEmpty {
                    if columns.lowerBound < innerColumns.lowerBound {
                        read(row, columns.lowerBound...innerColumns.lowerBound - 1)
                    }
                    if innerColumns.upperBound <= columns.upperBound {
                        read(row, innerColumns.upperBound...columns.upperBound)
                    }
                } else {
                    read(row, columns)
                }
            }
            level.forEachItem(in: UnsafeMutableBufferPointer(rebasing: runs[..<count]), classify)
        }
    }
}
