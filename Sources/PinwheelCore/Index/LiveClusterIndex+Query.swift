import Foundation
import HashTreeCollections

/// Viewport queries over base and delta: the base's features, less the points changed since, with
/// each cluster's count and centroid as the delta left them, plus the changed points that stand
/// alone at the query's zoom.
extension LiveClusterIndex {
    public func features(in bbox: BBox, zoom: Double, into out: inout [Feature]) {
        base.features(in: bbox, zoom: zoom, into: &out)
        guard !delta.isEmpty else { return }
        overlay(&out)
        var rects: [MercatorRect] = []
        _ = bbox.mercatorRects(into: &rects)
        let li = base.levelIndex(zoom: zoom)
        let beyondRaw = base.isBeyondRaw(zoom)
        for rect in rects {
            forEachStandalone(atLevel: li, in: rect) { entry, from in
                out.append(standalone(entry, from: from, atLevel: li, beyondRaw: beyondRaw))
            }
        }
    }

    /// Base features as the delta leaves them: without the points changed since the build, each
    /// cluster with its count and centroid now (or its one remaining point, or gone once empty).
    func overlay(_ features: inout [Feature]) {
        var kept = 0
        for i in features.indices {
            var f = features[i]
            if f.isPoint {
                if delta.removedRows.contains(Int(f.row)) { continue }
            } else if f.slot >= 0 {
                let level = Int(f.slot) >> 26
                let item = Int(f.slot) & ((1 << 26) - 1)
                if let a = delta.adjustment(level: level, item: item, count: Int(f.count)) {
                    guard let adjusted = adjusted(f, level: level, item: item, by: a) else { continue }
                    f = adjusted
                }
            }
            features[kept] = f
            kept += 1
        }
        features.removeLast(features.count - kept)
    }

    /// An added point drawn alone at level `li`, from the list of level `from`.
    func standalone(_ entry: StandaloneEntry, from: Int, atLevel li: Int, beyondRaw: Bool) -> Feature {
        let parent: FeatureID?
        if beyondRaw {
            parent = FeatureID(entry.id)
        } else if li == 0 {
            parent = nil
        } else if li == from && entry.parentHolder >= 0 {
            // The coarsest level it stands alone at: one level up a cluster holds it.
            parent = base.identity(level: li - 1, item: Int(entry.parentHolder)).id
        } else {
            parent = FeatureID(entry.id)
        }
        return feature(entry.id, at: entry.position, revision: entry.revision, parent: parent)
    }

    /// A base cluster as the delta leaves it: nil once it holds nothing; its one remaining base
    /// point once that is all it holds.
    private func adjusted(_ f: Feature, level: Int, item: Int, by a: ItemAdjustment) -> Feature? {
        let count = Int(f.count) + Int(a.count)
        if count <= 0 { return nil }
        // One point left: a base point (unless the one is a changed point that joined).
        if count == 1,
            let leaf = base.leaves(level: level, item: item, limit: Int(f.count), offset: 0).first(where: {
                !delta.removedRows.contains(Int($0.row))
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

    /// Calls `body` with every added point drawn as a point at level `li` inside a rectangle.
    /// - Parameter body: gets each entry and the level of the list it is in.
    func forEachStandalone(atLevel li: Int, in rect: MercatorRect, _ body: (StandaloneEntry, Int) -> Void) {
        guard rect.minX <= rect.maxX, rect.minY <= rect.maxY else { return }
        for from in 0...li where !delta.standalone[from].isEmpty {
            let cells = delta.standalone[from]
            let bits = delta.cellBits(level: from)
            let side = 1 << bits
            let scale = Double(side)
            func cell(_ v: Double) -> Int { max(0, min(Int(v * scale), side - 1)) }
            let (columnLo, columnHi) = (cell(rect.minX), cell(rect.maxX))
            let (rowLo, rowHi) = (cell(rect.minY), cell(rect.maxY))
            func visit(_ entries: [StandaloneEntry]) {
                for entry in entries where rect.contains(x: entry.x, y: entry.y) { body(entry, from) }
            }
            // Through the cells in view, or over every cell holding one when there are fewer of those.
            if (rowHi - rowLo + 1) * (columnHi - columnLo + 1) > cells.count {
                for (key, entries) in cells {
                    let row = Int(key.value) >> bits
                    let column = Int(key.value) & (side - 1)
                    if row >= rowLo && row <= rowHi && column >= columnLo && column <= columnHi { visit(entries) }
                }
                continue
            }
            for row in rowLo...rowHi {
                for column in columnLo...columnHi {
                    if let entries = cells[TrieKey(row << bits | column)] { visit(entries) }
                }
            }
        }
    }
}
