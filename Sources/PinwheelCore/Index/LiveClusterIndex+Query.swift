import Foundation

/// Viewport queries over base and delta: the base's features, less the points changed since, with
/// each cluster's count and centroid as the delta left them, plus the changed points that stand
/// alone at the query's zoom.
extension LiveClusterIndex {
    public func features(in bbox: BBox, zoom: Double, into out: inout [Feature]) {
        base.features(in: bbox, zoom: zoom, into: &out)
        guard !delta.isEmpty else { return }
        let li = base.levelIndex(zoom: zoom)
        let isRaw = li == base.levels.count - 1
        let beyondRaw = zoom.isFinite && floor(zoom) > Double(base.options.maxZoom + 1)
        var kept = 0
        for i in out.indices {
            var f = out[i]
            if f.isPoint {
                if delta.removed.contains(UInt32(truncatingIfNeeded: f.id)) { continue }
            } else if f.slot >= 0 {
                let level = Int(f.slot) >> 26
                let item = Int(f.slot) & ((1 << 26) - 1)
                if let a = delta.adjustments[level][Int32(item)] {
                    guard let adjusted = adjusted(f, level: level, item: item, by: a) else { continue }
                    f = adjusted
                }
            }
            out[kept] = f
            kept += 1
        }
        out.removeLast(out.count - kept)

        let minY = Mercator.y(lat: bbox.north)
        let maxY = Mercator.y(lat: bbox.south)
        var rects: [MercatorRect] = []
        if bbox.crossesAntimeridian {
            rects.append(MercatorRect(minX: Mercator.x(lon: bbox.west), minY: minY, maxX: 1, maxY: maxY))
            rects.append(MercatorRect(minX: 0, minY: minY, maxX: Mercator.x(lon: bbox.east), maxY: maxY))
        } else {
            rects.append(
                MercatorRect(minX: Mercator.x(lon: bbox.west), minY: minY, maxX: Mercator.x(lon: bbox.east), maxY: maxY)
            )
        }
        for rect in rects {
            forEachAdded(in: rect) { k in
                guard isRaw || holders[k * holderStride + li] < 0 else { return }
                let parent: FeatureID?
                if beyondRaw {
                    parent = FeatureID(ids[k])
                } else if li == 0 {
                    parent = nil
                } else if case let above = holders[k * holderStride + li - 1], above >= 0 {
                    parent = base.identity(level: li - 1, item: Int(above)).id
                } else {
                    parent = FeatureID(ids[k])
                }
                out.append(point(k, parent: parent))
            }
        }
    }

    /// Added point k as a feature.
    func point(_ k: Int, parent: FeatureID?) -> Feature {
        let position = positions[k]
        var feature = Feature(
            id: FeatureID(ids[k]), lat: position.lat, lon: position.lon, count: 1, parent: parent,
            row: changedRows!.start + Int32(k))
        feature.revision = changedRows!.revisions[k]
        return feature
    }

    /// A base cluster as the delta leaves it: nil once it holds nothing; its one remaining base
    /// point once that is all it holds.
    private func adjusted(_ f: Feature, level: Int, item: Int, by a: ItemAdjustment) -> Feature? {
        let count = Int(f.count) + Int(a.count)
        if count <= 0 { return nil }
        // One point left: a base point (unless the one is a changed point that joined).
        if count == 1,
            let leaf = base.leaves(of: f.id, limit: Int(f.count), offset: 0)?.first(where: {
                !delta.removed.contains(UInt32($0.id))
            })
        {
            var point = leaf
            point.parent = f.parent
            return point
        }
        let xy = base.levels[level].xy
        let weight = Double(f.count)
        var g = f
        g.count = UInt32(count)
        g.lon = Mercator.lon(x: (xy[2 * item] * weight + a.x) / Double(count))
        g.lat = Mercator.lat(y: (xy[2 * item + 1] * weight + a.y) / Double(count))
        return g
    }

    /// Calls `body` with every added point inside a rectangle: row by row of the cells it covers, or
    /// over all of them when that reads fewer.
    private func forEachAdded(in rect: MercatorRect, _ body: (Int) -> Void) {
        let n = keys.count
        guard n > 0, rect.minX <= rect.maxX, rect.minY <= rect.maxY else { return }
        let side = 1 << Self.cellBits
        let scale = Double(side)
        func cell(_ v: Double) -> Int { max(0, min(Int(v * scale), side - 1)) }
        let (columnLo, columnHi) = (cell(rect.minX), cell(rect.maxX))
        let (rowLo, rowHi) = (cell(rect.minY), cell(rect.maxY))
        let searches = (rowHi - rowLo + 1) * (n.bitWidth - n.leadingZeroBitCount + 1)
        if searches >= n {
            for k in 0..<n where rect.contains(x: xy[2 * k], y: xy[2 * k + 1]) { body(k) }
            return
        }
        let shift = UInt64(Self.cellBits)
        for row in rowLo...rowHi {
            let first = UInt64(row) << shift | UInt64(columnLo)
            let last = UInt64(row) << shift | UInt64(columnHi)
            var lo = 0
            var hi = n
            while lo < hi {
                let mid = (lo + hi) >> 1
                if keys[mid] < first { lo = mid + 1 } else { hi = mid }
            }
            var k = lo
            while k < n && keys[k] <= last {
                if rect.contains(x: xy[2 * k], y: xy[2 * k + 1]) { body(k) }
                k += 1
            }
        }
    }
}
