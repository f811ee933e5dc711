/// The changes since a ``ClusterIndex`` was built, laid over it instead of rebuilding it: a live
/// index shows them at once, and a background rebuild (compaction) later replaces base and delta
/// with an exact build.
///
/// A changed point leaves its base features: it is taken out of the count and centroid of every
/// cluster that held it. Where it is now, it joins, at each zoom, the cluster the base has nearest to
/// it within that zoom's radius, and stays in that cluster's ancestors at coarser zooms, as a fresh
/// build keeps merged points merged; where no cluster is that near it is drawn as a point. At the raw
/// level (`maxZoom + 1` and beyond) this is exact; above it, a point joins an existing cluster
/// rather than forming a new one, which compaction then corrects. Cluster ids never change here, so
/// a viewer's difference stays the clusters whose count or centroid moved.
///
/// A value type: the thread keeping it applies changes, and each published ``LiveClusterIndex``
/// holds a copy.
public struct ClusterDelta: Sendable {
    /// The exact build the changes are laid over.
    public let base: ClusterIndex
    /// What each base cluster gained and lost, per level (the base's order, coarsest first).
    var adjustments: [[Int32: ItemAdjustment]]
    /// Base points changed since the base was built: their base features are left out.
    var removed: Set<UInt32> = []
    /// Points changed since the base was built that exist now.
    var added: [UInt32: AddedPoint] = [:]

    /// A delta with no changes over `base`.
    public init(base: ClusterIndex) {
        self.base = base
        adjustments = Array(repeating: [:], count: base.levels.count)
    }

    /// How far the delta has drifted from its base: base points it leaves out plus points it adds (a
    /// moved point counts twice).
    public var size: Int { removed.count + added.count }

    /// True when nothing changed since the base was built.
    public var isEmpty: Bool { removed.isEmpty && added.isEmpty }

    /// Lays one change over the base: the point leaves where it was (in the base or in an earlier
    /// change) and, unless deleted, joins where it is now.
    public mutating func apply(_ change: ChangedPoint) {
        let id = change.id
        if !removed.contains(id), let holders = base.holders(ofPoint: id) {
            removed.insert(id)
            let raw = base.levels[base.levels.count - 1]
            let item = Int(holders[0])
            // A same-coordinate group stands at its centre: that is what its members brought to clusters.
            let x = raw.xy[2 * item]
            let y = raw.xy[2 * item + 1]
            for (k, holder) in holders.enumerated() {
                adjust(level: base.levels.count - 1 - k, item: holder, by: -1, x: x, y: y)
            }
        }
        if let old = added.removeValue(forKey: id) {
            for (li, holder) in old.holders.enumerated() where holder >= 0 {
                adjust(level: li, item: holder, by: -1, x: old.x, y: old.y)
            }
        }
        guard let position = change.position else { return }
        var point = AddedPoint(
            x: Mercator.x(lon: position.lon), y: Mercator.y(lat: position.lat), position: position,
            holders: [Int32](repeating: -1, count: base.levels.count - 1))
        // Finest cluster level first: once a cluster takes the point, its ancestors hold it too.
        var holder: Int?
        for li in stride(from: base.levels.count - 2, through: 0, by: -1) {
            if let finer = holder {
                holder = Int(base.levels[li + 1].parents[finer])
            } else {
                holder = base.nearestCluster(level: li, x: point.x, y: point.y) { item in
                    Int(ItemMeta.count(base.levels[li].meta[item])) + Int(adjustments[li][Int32(item)]?.count ?? 0) > 0
                }
            }
            if let holder {
                point.holders[li] = Int32(holder)
                adjust(level: li, item: Int32(holder), by: 1, x: point.x, y: point.y)
            }
        }
        added[id] = point
    }

    /// Adds (or takes away) a point's share of a cluster's count and centroid; points and groups
    /// need none, since they are found by id.
    private mutating func adjust(level li: Int, item: Int32, by count: Int32, x: Double, y: Double) {
        guard ItemMeta.isCluster(base.levels[li].meta[Int(item)]) else { return }
        var a = adjustments[li][item, default: ItemAdjustment()]
        a.count += count
        a.x += Double(count) * x
        a.y += Double(count) * y
        adjustments[li][item] = a.count == 0 && a.x == 0 && a.y == 0 ? nil : a
    }
}

/// What a base cluster gained or lost: points, and the sums of their mercator coordinates.
struct ItemAdjustment: Sendable {
    var count: Int32 = 0
    var x: Double = 0
    var y: Double = 0
}

/// A point changed since the base was built, where it is now.
struct AddedPoint: Sendable {
    /// Mercator position.
    var x: Double
    var y: Double
    var position: Coordinate
    /// The base cluster holding it at each level below the raw one, -1 where it stands alone.
    var holders: [Int32]
}
