/// A ``ClusterIndex`` with the changes since it was built laid over it (``ClusterDelta``): what the
/// sessions of a server with live data query between two compactions. Immutable once made, so any
/// number of threads may query it while the next one is prepared.
///
/// Features of base points keep their base rows; points the delta adds take rows from
/// ``ChangedRows/start`` on, whose properties and revisions come with the index (``changedRows``),
/// so publishing one never copies the whole table.
public final class LiveClusterIndex: Clusterer {
    public var algorithm: Algorithm { .hierarchical }
    /// The base's points, with the version and names of the data now.
    public let dataset: Dataset
    public var aggregates: [Aggregate] { base.aggregates }
    public let pointCount: Int
    public let changedRows: ChangedRows?

    let base: ClusterIndex
    let delta: ClusterDelta
    /// The delta's added points in grid-cell order (``cellBits`` per axis), so a query reads only the
    /// cells in view: cell keys, ids, mercator x at 2k and y at 2k + 1, positions, and the holder of
    /// each at each cluster level (`holderStride` per point).
    let keys: [UInt64]
    let ids: [UInt32]
    let xy: [Double]
    let positions: [Coordinate]
    let holders: [Int32]
    let holderStride: Int
    static let cellBits = 12

    /// Publishes a delta.
    /// - Parameters:
    ///   - delta: the base and the changes laid over it; the base must have no aggregates.
    ///   - version: the data version the delta brings the base to.
    ///   - names: the names of points producers named by strings, now.
    ///   - pointCount: the points in the data now.
    ///   - rows: the properties and revisions of the given points now (the ids of the added points in
    ///     the order their rows take).
    public init(
        delta: ClusterDelta, version: UInt64, names: [UInt32: String], pointCount: Int,
        rows: ([UInt32]) -> (properties: PropertyTable, revisions: [UInt32])
    ) {
        precondition(delta.base.aggregates.isEmpty, "a live index carries no aggregates")
        base = delta.base
        self.delta = delta
        self.pointCount = pointCount
        var dataset = delta.base.dataset
        dataset.version = version
        dataset.names = names
        self.dataset = dataset
        holderStride = base.levels.count - 1

        var entries = delta.added.map { (id, point) in
            (key: GridOrder.key(x: point.x, y: point.y, bits: Self.cellBits), id: id, point: point)
        }
        entries.sort { ($0.key, $0.id) < ($1.key, $1.id) }
        keys = entries.map(\.key)
        ids = entries.map(\.id)
        xy = entries.flatMap { [$0.point.x, $0.point.y] }
        positions = entries.map(\.point.position)
        holders = entries.flatMap(\.point.holders)
        let (properties, revisions) = rows(ids)
        changedRows = ChangedRows(start: Int32(base.dataset.count), properties: properties, revisions: revisions)
    }

    /// A live index with nothing changed over `base`, at the base's version.
    public convenience init(base: ClusterIndex) {
        self.init(
            delta: ClusterDelta(base: base), version: base.dataset.version, names: base.dataset.names,
            pointCount: base.dataset.count, rows: { _ in (PropertyTable(), []) })
    }

    public func children(of id: FeatureID) -> [Feature]? {
        if id >> 32 == 0, delta.added[UInt32(id)] != nil { return [] }
        return base.children(of: id).map(withoutRemoved)
    }

    public func leaves(of id: FeatureID, limit: Int, offset: Int) -> [Feature]? {
        if id >> 32 == 0, let k = ids.firstIndex(of: UInt32(id)) {
            guard offset == 0 && limit > 0 else { return [] }
            return [point(k, parent: nil)]
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
        delta.removed.isEmpty ? features : features.filter { !($0.isPoint && delta.removed.contains(UInt32($0.id))) }
    }
}
