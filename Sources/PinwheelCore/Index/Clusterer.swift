/// The clustering algorithms a session can choose.
public enum Algorithm: String, CaseIterable, Sendable, Codable {
    /// Supercluster-style greedy clustering per integer zoom (``ClusterIndex``).
    case hierarchical
    /// Principal-axis k-d tree cut breadth-first to at most `maxClusters` in view (``PCATree``).
    case pcaTree = "pca-tree"
}

/// What `expand` on a feature yields.
public enum Expansion: Equatable, Sendable {
    /// Zoom the map to this zoom to see the feature split.
    case zoom(Double)
    /// A same-coordinate group: its members, spread around the shared point for the given zoom.
    case spread([Feature])
}

/// A built, immutable clustering of one dataset. Both algorithms implement it, so the server, the
/// protocol and the page treat them alike. Implementations are safe to query from many threads.
public protocol Clusterer: Sendable {
    /// Which algorithm this is.
    var algorithm: Algorithm { get }
    /// The dataset it was built from.
    var dataset: Dataset { get }
    /// The values reduced over every cluster's points, in the order ``aggregateValues(of:)`` returns.
    var aggregates: [Aggregate] { get }

    /// The features to draw for a viewport.
    /// - Parameters:
    ///   - bbox: the viewport, possibly crossing the antimeridian.
    ///   - zoom: map zoom; fractional zooms are allowed.
    ///   - out: receives the features; cleared first, capacity kept.
    func features(in bbox: BBox, zoom: Double, into out: inout [Feature])

    /// What a view moving within one zoom level gains and loses, read from the two boxes' differences
    /// only; what both boxes show is not read. A session whose client has exactly `old`'s features
    /// serves `new` with it.
    /// - Parameters:
    ///   - entering: receives `new`'s features that `old` lacks; cleared first, capacity kept.
    ///   - leaving: receives the ids of `old`'s features that `new` lacks (the client has their
    ///     positions); cleared first, capacity kept.
    /// - Returns: false when this clusterer cannot tell without a whole query (then both are empty):
    ///   the zooms show different features, or the boxes share nothing.
    func viewMoved(
        from old: BBox, zoom oldZoom: Double, to new: BBox, zoom newZoom: Double, entering: inout [Feature],
        leaving: inout [FeatureID]
    ) -> Bool

    /// The features one zoom step finer that make up a cluster; nil for an unknown id.
    func children(of id: FeatureID) -> [Feature]?

    /// The points under a cluster, in a stable order; nil for an unknown id.
    func leaves(of id: FeatureID, limit: Int, offset: Int) -> [Feature]?

    /// Every point a feature holds as a query at `zoom` draws it (a live index's cluster may hold more
    /// at a coarser zoom than at the one that made it); nil for an unknown id.
    func members(of id: FeatureID, zoom: Double) -> [Feature]?

    /// A page of ``members(of:zoom:)``: the `limit` smallest ids after `after`; nil for an unknown id.
    func memberPage(of id: FeatureID, zoom: Double, after: UInt32?, limit: Int) -> MemberPage?

    /// How to open a feature: the zoom at which it splits, or the spread of a same-coordinate group.
    /// - Parameters:
    ///   - id: a feature id returned by a query.
    ///   - zoom: the client's current zoom (spread placement depends on it).
    func expansion(of id: FeatureID, zoom: Double) -> Expansion?

    /// The reduced values of ``aggregates`` for a feature (a point's own values for a point); a
    /// `mean` is still its sum here, see ``Aggregate/value(reduced:count:)``.
    func aggregateValues(of feature: Feature) -> ArraySlice<Double>

    /// What every cluster counts besides its points (``ClusterContents/none`` when nothing).
    var contents: ClusterContents { get }

    /// Adds a cluster's counts (``ClusterContents/slots`` of them: its breakdown, then its flags) to
    /// `counts`; adds nothing for a point.
    func addContents(of feature: Feature, to counts: inout [Int32])

    /// Points in the data now (a live index's base dataset may hold fewer or more).
    var pointCount: Int { get }

    /// Rows of points changed since a live index's base was built; nil for a clusterer built whole.
    var changedRows: ChangedRows? { get }
}

extension Clusterer {
    public func viewMoved(
        from old: BBox, zoom oldZoom: Double, to new: BBox, zoom newZoom: Double, entering: inout [Feature],
        leaving: inout [FeatureID]
    ) -> Bool {
        entering.removeAll(keepingCapacity: true)
        leaving.removeAll(keepingCapacity: true)
        return false
    }

    public var pointCount: Int { dataset.count }
    public var contents: ClusterContents { .none }
    public func members(of id: FeatureID, zoom: Double) -> [Feature]? { leaves(of: id, limit: .max, offset: 0) }
    public func memberPage(of id: FeatureID, zoom: Double, after: UInt32?, limit: Int) -> MemberPage? {
        members(of: id, zoom: zoom).map { MemberPage(members: $0, after: after, limit: limit) }
    }
    public func addContents(of feature: Feature, to counts: inout [Int32]) {}
    public var changedRows: ChangedRows? { nil }
}
