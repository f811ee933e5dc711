/// A feature id. Points keep their dataset id (below 2^32); clusters get ids above 2^32 derived from
/// their content, so every id fits the 53 bits a JavaScript number holds exactly.
public typealias FeatureID = UInt64

/// One thing to draw: a single point, a spread member of a same-coordinate group, or a cluster.
public struct Feature: Hashable, Sendable {
    /// Stable id; see ``FeatureID``.
    public var id: FeatureID
    /// Where to draw it, degrees.
    public var lat: Double
    public var lon: Double
    /// Points it stands for: 1 for a point or a spread member.
    public var count: UInt32
    /// The feature containing this one at the next coarser zoom (nil at the coarsest), so a page can
    /// animate a split out of it and a merge into it. A point not merged above is its own parent.
    public var parent: FeatureID?
    /// True position of a spread member (drawn at lat/lon, with a leg to the anchor); nil otherwise.
    public var anchor: Coordinate?
    /// Dataset row of a single point or spread member, for its properties; -1 for a cluster.
    public var row: Int32
    /// Clusterer-private slot used to look up aggregate values; -1 when there is none.
    public var slot: Int32
    /// For a point of live data: changes with its properties (see ``Dataset/revisions``), so a
    /// property change reaches the clients that have it; 0 otherwise.
    public var revision: UInt32 = 0

    public init(
        id: FeatureID, lat: Double, lon: Double, count: UInt32, parent: FeatureID?,
        anchor: Coordinate? = nil, row: Int32, slot: Int32 = -1
    ) {
        self.id = id
        self.lat = lat
        self.lon = lon
        self.count = count
        self.parent = parent
        self.anchor = anchor
        self.row = row
        self.slot = slot
    }

    /// True for a single point or spread member.
    public var isPoint: Bool { row >= 0 }
}
