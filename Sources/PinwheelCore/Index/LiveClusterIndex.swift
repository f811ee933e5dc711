/// A ``ClusterIndex`` with the changes since it was built laid over it (``ClusterDelta``): what the
/// sessions of a server with live data query between two compactions. Immutable once made, so any
/// number of threads may query it while the next one is prepared; making one copies nothing.
///
/// Features of base points keep their base rows; points the delta adds carry row
/// ``ChangedRows/start`` and their properties come by id (``changedRows``).
public final class LiveClusterIndex: Clusterer {
    public var algorithm: Algorithm { .hierarchical }
    /// The base's points, with the version and names of the data now.
    public let dataset: Dataset
    public var aggregates: [Aggregate] { base.aggregates }
    public let pointCount: Int
    public let changedRows: ChangedRows?

    let base: ClusterIndex
    let delta: ClusterDelta

    /// Publishes a delta.
    /// - Parameters:
    ///   - delta: the base and the changes laid over it; the base must have no aggregates.
    ///   - version: the data version the delta brings the base to.
    ///   - names: the names of points producers named by strings, now.
    ///   - columns: the property columns now.
    ///   - pointCount: the points in the data now.
    public init(delta: ClusterDelta, version: UInt64, names: [UInt32: String], columns: [String], pointCount: Int) {
        precondition(delta.base.aggregates.isEmpty, "a live index carries no aggregates")
        // Contents stay exact under changes: see ``ClusterDelta/adjustContents(level:item:count:of:)``.
        base = delta.base
        self.delta = delta
        self.pointCount = pointCount
        var dataset = delta.base.dataset
        dataset.version = version
        dataset.names = names
        self.dataset = dataset
        let values = delta.addedValues
        changedRows = ChangedRows(start: Int32(base.dataset.count), columns: columns, values: { values[$0] ?? [] })
    }

    /// A live index with nothing changed over `base`, at the base's version.
    public convenience init(base: ClusterIndex) {
        self.init(
            delta: ClusterDelta(base: base), version: base.dataset.version, names: base.dataset.names,
            columns: base.dataset.properties.columns, pointCount: base.dataset.count)
    }

    public var contents: ClusterContents { base.contents }

    /// The base's children of a cluster as the changes leave them (counts, centroids, points gone).
    public func children(of id: FeatureID) -> [Feature]? {
        if id >> 32 == 0, delta.added[UInt32(id)] != nil { return [] }
        guard var children = base.children(of: id) else { return nil }
        if !delta.isEmpty { overlay(&children) }
        return children
    }

    /// The points under a feature at the zoom that made it (see ``members(of:zoom:)``); `offset` and
    /// `limit` count over that list.
    public func leaves(of id: FeatureID, limit: Int, offset: Int) -> [Feature]? {
        if id >> 32 == 0, delta.added[UInt32(id)] != nil {
            guard offset == 0 && limit > 0 else { return [] }
            return [point(UInt32(id), parent: nil)]
        }
        guard let all = members(of: id, zoom: -1) else { return nil }
        return Array(all.dropFirst(max(0, offset)).prefix(max(0, limit)))
    }

    /// The base's points under a feature that are still there, then the changed points that joined it
    /// since, by id. A cluster id stands for one item at each zoom from the one that made it up to the
    /// coarsest that keeps it, and a changed point joins a cluster from some zoom up: the item of
    /// `zoom`'s level when it is one of those, else the one that made it.
    public func members(of id: FeatureID, zoom: Double) -> [Feature]? {
        if id >> 32 == 0, delta.added[UInt32(id)] != nil { return [point(UInt32(id), parent: nil)] }
        guard let kept = base.leaves(of: id, limit: .max, offset: 0).map(withoutRemoved) else { return nil }
        guard let (li, item) = shownItem(of: id, zoom: zoom) else { return kept }
        return kept + delta.joinedIDs(level: li, item: item).sorted().map { point($0, parent: nil) }
    }

    /// A page read from the base's run of the cluster's positions less the removed ones, then the
    /// changed points that joined it, comparing ids alone, when the base keeps its order at the
    /// cluster's level (it does with contents).
    public func memberPage(of id: FeatureID, zoom: Double, after: UInt32?, limit: Int) -> MemberPage? {
        guard id >> 32 != 0, let order = base.order, let (li, item) = shownItem(of: id, zoom: zoom) else {
            return members(of: id, zoom: zoom).map { MemberPage(members: $0, after: after, limit: limit) }
        }
        let count = Int(ItemMeta.count(base.levels[li].meta[item]))
        var selector = MemberPage.Selector(after: after, limit: limit)
        var total = 0
        // Tags: 0 for a base point, 1 for a changed point that joined (the id is the key of both).
        order.idAtPosition.withUnsafeBufferPointer { ids in
            for p in order.run(level: li, item: item, count: count) where !delta.removed.contains(p) {
                selector.offer(id: ids[p], tag: 0)
                total += 1
            }
        }
        for joined in delta.joinedIDs(level: li, item: item) {
            selector.offer(id: joined, tag: 1)
            total += 1
        }
        let points = selector.page.map { $0.tag == 1 ? point($0.id, parent: nil) : base.leaf(ofID: $0.id) }
        return MemberPage(total: total, points: points, next: selector.next)
    }

    /// The base item a cluster id stands for at `zoom` (see ``members(of:zoom:)``); a negative zoom
    /// means the one that made it.
    func shownItem(of id: FeatureID, zoom: Double) -> (li: Int, item: Int)? {
        guard var (li, item) = base.clusterItem(id) else { return nil }
        let shown = zoom < 0 ? li : base.levelIndex(zoom: zoom)
        if shown < li {
            var (level, holder) = (li, item)
            while level > shown {
                holder = base.parent(level: level, item: holder)
                level -= 1
            }
            if base.identity(level: level, item: holder).id == id { (li, item) = (level, holder) }
        }
        return (li, item)
    }

    public func addContents(of feature: Feature, to counts: inout [Int32]) {
        guard !feature.isPoint, feature.slot >= 0 else { return }
        let (li, item) = (Int(feature.slot) >> 26, Int(feature.slot) & ((1 << 26) - 1))
        base.addContents(level: li, item: item, to: &counts)
        let count = Int(ItemMeta.count(base.levels[li].meta[item]))
        delta.adjustContents(level: li, item: item, count: count, of: &counts)
    }

    public func expansion(of id: FeatureID, zoom: Double) -> Expansion? {
        if id >> 32 == 0, delta.added[UInt32(id)] != nil { return .zoom(zoom) }
        switch base.expansion(of: id, zoom: zoom) {
        case .spread(let members): return .spread(withoutRemoved(members))
        case let other: return other
        }
    }

    public func aggregateValues(of feature: Feature) -> ArraySlice<Double> { [] }

    /// Features of the base without the points changed since it was built.
    func withoutRemoved(_ features: [Feature]) -> [Feature] {
        delta.removedCount == 0 ? features : features.filter { !delta.removedRows.contains(Int($0.row)) }
    }

    /// An added point as a feature.
    func point(_ id: UInt32, parent: FeatureID?) -> Feature {
        let point = delta.added[id]!
        return feature(id, at: point.position, revision: point.revision, parent: parent)
    }

    func feature(_ id: UInt32, at position: Coordinate, revision: UInt32, parent: FeatureID?) -> Feature {
        var feature = Feature(
            id: FeatureID(id), lat: position.lat, lon: position.lon, count: 1, parent: parent, row: changedRows!.start)
        feature.revision = revision
        return feature
    }
}
