/// A pan within one zoom, answered from the strips that enter and leave the view: a pan by a tenth
/// of the view's width reads two strips of a tenth each, where a whole query reads the view.
/// Same-zoom views of an index built whole differ only by whose items lie inside: an item shows the
/// same features (ids, positions, parents) in every view of its zoom.
extension ClusterIndex {
    public func viewMoved(
        from old: BBox, to new: BBox, zoom: Double, entering: inout [Feature], leaving: inout [Feature]
    ) -> Bool {
        entering.removeAll(keepingCapacity: true)
        leaving.removeAll(keepingCapacity: true)
        // Boxes across the antimeridian are two rectangles each: rare, and left to whole queries.
        guard !old.crossesAntimeridian, !new.crossesAntimeridian else { return false }
        guard dataset.count > 0 else { return true }
        let (from, to) = (MercatorRect(spanning: old), MercatorRect(spanning: new))
        withContext(zoom: zoom) { context in
            scan(context, rect: to, excluding: from, into: &entering)
            scan(context, rect: from, excluding: to, into: &leaving)
        }
        return true
    }
}
