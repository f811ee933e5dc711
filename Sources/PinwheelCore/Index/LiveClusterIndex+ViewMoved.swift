/// A pan or a zoom within one level of a live index, answered from what enters and leaves the view,
/// as its build answers them (``ClusterIndex/viewMoved(from:zoom:to:zoom:entering:leaving:)``). The
/// delta keeps what makes that exact: a base item shows as the same feature in every view of its
/// level, as the delta leaves it, and an added point drawn alone shows wherever it is.
extension LiveClusterIndex {
    public func viewMoved(
        from old: BBox, zoom oldZoom: Double, to new: BBox, zoom newZoom: Double, entering: inout [Feature],
        leaving: inout [FeatureID]
    ) -> Bool {
        guard !delta.isEmpty else {
            return base.viewMoved(
                from: old, zoom: oldZoom, to: new, zoom: newZoom, entering: &entering, leaving: &leaving)
        }
        entering.removeAll(keepingCapacity: true)
        leaving.removeAll(keepingCapacity: true)
        guard let (from, to) = base.movedRects(from: old, zoom: oldZoom, to: new, zoom: newZoom) else { return false }
        // Leaving items become whole features first: the delta may show one as another feature (its
        // one remaining point), or as none.
        var left: [Feature] = []
        if base.dataset.count > 0 {
            base.withContext(zoom: newZoom) { context in
                var scratch = ClusterIndex.SpreadScratch()
                base.scanMove(
                    context, from: from, to: to,
                    entering: { base.emit(context, item: $0, scratch: &scratch, into: &entering) },
                    leaving: { base.emit(context, item: $0, scratch: &scratch, into: &left) })
            }
        }
        overlay(&entering)
        overlay(&left)
        for f in left { leaving.append(f.id) }
        let li = base.levelIndex(zoom: newZoom)
        let beyondRaw = base.isBeyondRaw(newZoom)
        forEachStandalone(atLevel: li, in: to) { entry, level in
            if !from.contains(x: entry.x, y: entry.y) {
                entering.append(standalone(entry, from: level, atLevel: li, beyondRaw: beyondRaw))
            }
        }
        forEachStandalone(atLevel: li, in: from) { entry, _ in
            if !to.contains(x: entry.x, y: entry.y) { leaving.append(FeatureID(entry.id)) }
        }
        return true
    }
}
