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

    public func children(of id: FeatureID) -> [Feature]? {
        if id >> 32 == 0, delta.added[UInt32(id)] != nil { return [] }
        return base.children(of: id).map(withoutRemoved)
    }

    public func leaves(of id: FeatureID, limit: Int, offset: Int) -> [Feature]? {
        if id >> 32 == 0, delta.added[UInt32(id)] != nil {
            guard offset == 0 && limit > 0 else { return [] }
            return [point(UInt32(id), parent: nil)]
        }
        return base.leaves(of: id, limit: limit, offset: offset).map(withoutRemoved)
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
