import HashTreeCollections

/// The changes since a ``ClusterIndex`` was built, laid over it instead of rebuilding it: a live
/// index shows them at once, and a background rebuild (compaction) later replaces base and delta
/// with an exact build.
///
/// A changed point leaves its base features: it is taken out of the count and centroid of every
/// cluster that held it. Where it is now, it joins, at each zoom, the cluster the base has nearest to
/// it within two of that zoom's radii (``reach``), and stays in that cluster's ancestors at coarser
/// zooms, as a fresh build keeps merged points merged; where no cluster is that near it is drawn as a
/// point. At the raw level (`maxZoom + 1` and beyond) this is exact; above it, a point joins an
/// existing cluster rather than forming a new one, which compaction then corrects. Cluster ids never
/// change here, so a viewer's difference stays the clusters whose count or centroid moved.
///
/// A value type over persistent maps (the points drawn alone: a flat array per grid cell): a copy shares everything with the original and a change to
/// either copies only the paths it touches, so publishing a ``LiveClusterIndex`` costs nothing and a
/// change costs O(levels · log n) whatever the delta's size.
public struct ClusterDelta: Sendable {
    /// The exact build the changes are laid over.
    public let base: ClusterIndex
    /// What each base cluster gained and lost, per level (the base's order, coarsest first): at the
    /// coarse levels, where changes reach nearly every cluster, by item in chunked arrays (empty at
    /// the others); at the fine ones (from ``firstMappedLevel`` on) a persistent map, which a change
    /// copies only a path of, and which holds only what points joining a cluster brought.
    var denseAdjustments: [AdjustmentChunks]
    var adjustments: [TreeDictionary<TrieKey, ItemAdjustment>]
    /// The items of each level whose entry in the arrays or maps above a change reached: a query
    /// tests a bit, and looks further only for those (at the zooms most views are at, a few percent
    /// of the clusters).
    var adjusted: [BitSet]
    /// The base points changed since the base was built, by row: their base features are left out
    /// (base features carry their row).
    var removedRows: BitSet
    /// The same points by their positions in the base's hierarchy (``order``): at the fine levels
    /// what they took out of a cluster is read from the cluster's run of positions, so a removed
    /// point changes a bit there instead of a path of each fine level's map, which the index it was
    /// published in would free (most changes remove a base point). Bits rather than persistent sets: a
    /// publication's first change copies them whole (125 kB each at 1M points).
    var removed: BitSet
    /// How many points `removed` holds.
    private(set) var removedCount = 0
    /// The base's rows in the order of its hierarchy.
    let order: HierarchyOrder
    /// The first level with more items than an array of adjustments may have (the base's level count
    /// when none has).
    let firstMappedLevel: Int
    /// Points changed since the base was built that exist now.
    var added: TreeDictionary<UInt32, AddedPoint> = [:]
    /// The property values of those that have any, kept apart so that `added`'s values hold no
    /// reference: copying a path of `added` copies bytes, and freeing one releases nothing in it.
    var addedValues: TreeDictionary<UInt32, [PropertyValue?]> = [:]
    /// The added points by the coarsest level at which they are drawn as points (no cluster holds
    /// them there or at any finer level; the raw level for every point a cluster holds below it), then
    /// by grid cell (``cellBits(level:)`` per axis, cells about a map tile wide at that level's zoom):
    /// a query at level li reads lists 0...li, a dozen cells of each, and a change moves a point in
    /// one list.
    var standalone: [TreeDictionary<TrieKey, [StandaloneEntry]>]
    /// Reads a changed point's contents code from its cells; nil when clusters count nothing more.
    let coder: ClusterContents.Coder?
    /// Per level, what the added points that joined a base cluster bring to its counts
    /// (``ClusterContents/slots`` each); empty without a coder. What removed points took out is read
    /// from the base's tally over the cluster's run, as their count is at the fine levels.
    var joinedContents: [TreeDictionary<TrieKey, [Int32]>]

    /// A delta with no changes over `base`.
    public init(base: ClusterIndex) {
        self.init(base: base, largestDenseLevel: Self.largestDenseLevel(points: base.dataset.count))
    }

    /// A delta with no changes over `base`, keeping the adjustments of levels of up to
    /// `largestDenseLevel` items in arrays (tests lower it to reach the fine levels' way on small data).
    init(base: ClusterIndex, largestDenseLevel: Int) {
        self.base = base
        adjustments = Array(repeating: [:], count: base.levels.count)
        let firstMapped = base.levels.firstIndex { $0.count > largestDenseLevel } ?? base.levels.count
        firstMappedLevel = firstMapped
        denseAdjustments = base.levels.enumerated().map { li, level in
            AdjustmentChunks(count: li < firstMapped ? level.count : 0)
        }
        adjusted = base.levels.map { BitSet(count: $0.count) }
        // The base's own order when it keeps one for its tally: it answers every level.
        order = base.order ?? HierarchyOrder(base, keepingFrom: firstMappedLevel)
        coder = base.contents.isEmpty ? nil : base.contents.coder(columns: base.dataset.properties.columns)
        joinedContents = Array(repeating: [:], count: coder == nil ? 0 : base.levels.count)
        removedRows = BitSet(count: base.dataset.count)
        removed = BitSet(count: order.rawItemAtPosition.count)
        standalone = Array(repeating: [:], count: base.levels.count)
    }

    /// How far the delta has drifted from its base: base points it leaves out plus points it adds (a
    /// moved point counts twice).
    public var size: Int { removedCount + added.count }

    /// The points the base with the changes laid over it holds.
    public var pointCount: Int { base.dataset.count - removedCount + added.count }

    /// Roughly the bytes the delta holds beside its base: its flags, the coarse levels' arrays, the
    /// hierarchy order when the base keeps none, and about 64 bytes per entry of its maps.
    public var storedBytes: Int {
        let flags = removedRows.storedBytes + removed.storedBytes + adjusted.reduce(0) { $0 + $1.storedBytes }
        let arrays = denseAdjustments.reduce(0) { $0 + $1.storedBytes }
        let entries = added.count * 2 + adjustments.reduce(0) { $0 + $1.count } + standalone.reduce(0) { $0 + $1.count }
        return flags + arrays + (base.order == nil ? order.storedBytes : 0) + entries * 64
    }

    /// True when nothing changed since the base was built.
    public var isEmpty: Bool { removedCount == 0 && added.isEmpty }

    /// Lays one change over the base, where nothing needs to know where it happened.
    public mutating func apply(_ change: ChangedPoint) {
        var footprint = ChangeFootprint()
        apply(change, footprint: &footprint)
    }

    /// Lays one change over the base: the point leaves where it was (in the base or in an earlier
    /// change) and, unless deleted, joins where it is now.
    /// - Parameter footprint: receives the places the point left and reached.
    public mutating func apply(_ change: ChangedPoint, footprint: inout ChangeFootprint) {
        let id = change.id
        if let row = base.row(ofID: FeatureID(id)), case let position = Int(order.positionOfRow[row]), position >= 0,
            !removed.contains(position)
        {
            removed.insert(position)
            removedRows.insert(row)
            removedCount += 1
            let rawLevel = base.levels.count - 1
            let item = Int(order.rawItemAtPosition[position])
            // A same-coordinate group stands at its centre: that is what its members brought to clusters.
            let (x, y) = base.position(level: rawLevel, item: item)
            footprint.add(x: x, y: y)
            // The fine levels read the loss from their clusters' runs; the coarse ones keep it.
            var (level, holder) = (rawLevel, item)
            while level >= firstMappedLevel && level > 0 {
                holder = base.parent(level: level, item: holder)
                level -= 1
            }
            if level < firstMappedLevel { adjustChain(from: level, item: holder, by: -1, x: x, y: y) }
        }
        if let old = added.removeValue(forKey: id) {
            addedValues[id] = nil
            footprint.add(x: old.x, y: old.y)
            if old.finest >= 0 {
                adjustChain(from: Int(old.finest), item: Int(old.holder), by: -1, x: old.x, y: old.y, code: old.code)
            }
            let from = old.standaloneFrom
            let cell = cellKey(level: from, x: old.x, y: old.y)
            standalone[from][cell]?.removeAll { $0.id == id }
            if standalone[from][cell]?.isEmpty == true { standalone[from][cell] = nil }
        }
        guard let now = change.now else { return }
        var point = AddedPoint(
            x: Mercator.x(lon: now.position.lon), y: Mercator.y(lat: now.position.lat), position: now.position,
            revision: now.revision, finest: -1, holder: -1, code: coder?.code(now.values[...]) ?? 0)
        if let (level, item) = finestHolder(x: point.x, y: point.y) {
            point.finest = Int32(level)
            point.holder = Int32(item)
            adjustChain(from: level, item: item, by: 1, x: point.x, y: point.y, code: point.code)
        }
        footprint.add(x: point.x, y: point.y)
        let from = point.standaloneFrom
        standalone[from][cellKey(level: from, x: point.x, y: point.y), default: []].append(
            StandaloneEntry(
                id: id, parentHolder: point.holder, revision: now.revision, x: point.x, y: point.y,
                position: now.position))
        added[id] = point
        if !now.values.isEmpty { addedValues[id] = now.values }
    }

    /// The finest level below the raw one where a cluster the delta has not emptied lies within
    /// ``reach`` of (x, y), and that cluster: the finest level with one holds the point, finer ones
    /// show it alone. Found by bisecting the levels, since a spot with a cluster near at one zoom has
    /// one near at the coarser zooms (a parent holds its children's points within a wider radius):
    /// 4 or 5 searches, where walking down from the coarsest level took about 10 with 1M points.
    /// Where that does not hold, the point joins a coarser cluster until the next compaction.
    private func finestHolder(x: Double, y: Double) -> (level: Int, item: Int)? {
        var found: (level: Int, item: Int)?
        // Every level up to `found` has a cluster near, none from `missing` on.
        var missing = base.levels.count - 1
        while missing - (found?.level ?? -1) > 1 {
            let li = ((found?.level ?? -1) + missing) / 2
            // This level's adjustments alone: a closure over `self` would copy the whole delta.
            let (touched, dense, sparse) = (adjusted[li], denseAdjustments[li], adjustments[li])
            let losses = li >= firstMappedLevel ? (removed, order) : nil
            let accepts = { (item: Int, count: Int) in
                var left =
                    count + Int(Self.adjustment(of: item, touched: touched, dense: dense, sparse: sparse)?.count ?? 0)
                if let (removed, order) = losses {
                    left -= removed.count(in: order.run(level: li, item: item, count: count))
                }
                return left > 0
            }
            if let item = base.nearestCluster(level: li, x: x, y: y, reach: Self.reach, accepts: accepts) {
                found = (li, item)
            } else {
                missing = li
            }
        }
        return found
    }

    /// Adds (or takes away) a point's share of item `item` of level `from` and of the items holding
    /// it at every coarser level: a fresh build keeps merged points merged, so they are its ancestors.
    /// - Parameter code: an added point's contents code, counted in ``joinedContents``; nil for a
    ///   removed base point, whose share the base's tally reads.
    private mutating func adjustChain(
        from: Int, item: Int, by count: Int32, x: Double, y: Double, code: ClusterContents.Code? = nil
    ) {
        var item = item
        for li in stride(from: from, through: 0, by: -1) {
            adjust(level: li, item: Int32(item), by: count, x: x, y: y)
            if let code, !joinedContents.isEmpty, ItemMeta.isCluster(base.meta(level: li, item: item)) {
                let contents = base.contents
                ContentTally.add(
                    code, by: count,
                    to: &joinedContents[li][TrieKey(item), default: Array(repeating: 0, count: contents.slots)],
                    contents: contents)
            }
            if li > 0 { item = base.parent(level: li, item: item) }
        }
    }

    /// Adds what changes brought to and took from item `item` of level li (a base cluster of `count`
    /// points) to its base counts in `counts`.
    func adjustContents(level li: Int, item: Int, count: Int, of counts: inout [Int32]) {
        guard let tally = base.tally else { return }
        if removedCount > 0 {
            tally.codes.withUnsafeBufferPointer { codes in
                removed.forEach(in: order.run(level: li, item: item, count: count)) { position in
                    ContentTally.add(codes[position], by: -1, to: &counts, contents: tally.contents)
                }
            }
        }
        if let joined = joinedContents[li][TrieKey(item)] {
            for s in joined.indices { counts[s] &+= joined[s] }
        }
    }

    /// The ids of the points changed since the build that joined item `item` of level li (and so count
    /// among its points), found from each one's finest holder up.
    /// - Complexity: O(added points × levels).
    func joinedIDs(level li: Int, item: Int) -> [UInt32] {
        var ids: [UInt32] = []
        for (id, point) in added where Int(point.finest) >= li {
            var (level, holder) = (Int(point.finest), Int(point.holder))
            while level > li {
                holder = base.parent(level: level, item: holder)
                level -= 1
            }
            if holder == item { ids.append(id) }
        }
        return ids
    }

    /// Adds (or takes away) a point's share of a cluster's count and centroid; points and groups
    /// need none, since they are found by id.
    private mutating func adjust(level li: Int, item: Int32, by count: Int32, x: Double, y: Double) {
        guard ItemMeta.isCluster(base.meta(level: li, item: Int(item))) else { return }
        // In place: one walk down the persistent map. An entry that comes back to nothing stays; the
        // next compaction drops it.
        if denseAdjustments[li].isEmpty {
            ItemAdjustment.add(count, x, y, to: &adjustments[li][TrieKey(item), default: ItemAdjustment()])
        } else {
            denseAdjustments[li].add(count, x, y, to: Int(item))
        }
        adjusted[li].insert(Int(item))
    }

    /// How far from a cluster's centroid, in radii of its zoom, a changed point joins it: as far as a
    /// fresh build's cluster holds points. Such a cluster takes the points within a radius of its seed,
    /// so its centroid lies within a radius of the seed and its points within two of the centroid.
    /// Joining only within one radius left 346 features at zoom 5 where a fresh build of the same
    /// points draws 240 (`pinwheel bench --live-changes 30000`), until the next compaction.
    static let reach = 2.0

    /// Most items a level may have to keep its adjustments in arrays: 24 bytes each, a chunk copied
    /// at its first change after each publication (with 1M points, zooms 0–9: about 10 MB).
    static let largestDenseLevel = 262_144

    /// The same for a base of `points` points. Arrays pay at the coarse levels, where the changes of
    /// one publication reach most clusters; a quarter of the points keeps that to the same zooms for a
    /// filtered view's smaller index, where the fixed bound kept every level in arrays and each
    /// publication copied them all (48 MB for 100,000 points).
    static func largestDenseLevel(points: Int) -> Int { min(largestDenseLevel, max(4_096, points / 4)) }

    /// What a base cluster of `count` points gained and lost, if a change reached it.
    func adjustment(level li: Int, item: Int, count: Int) -> ItemAdjustment? {
        let joined = Self.adjustment(
            of: item, touched: adjusted[li], dense: denseAdjustments[li], sparse: adjustments[li])
        guard li >= firstMappedLevel, removedCount > 0 else { return joined }
        let rawLevel = base.levels.count - 1
        var a = joined ?? ItemAdjustment()
        var lostAny = false
        removed.forEach(in: order.run(level: li, item: item, count: count)) { position in
            let (x, y) = base.position(level: rawLevel, item: Int(order.rawItemAtPosition[position]))
            ItemAdjustment.add(-1, x, y, to: &a)
            lostAny = true
        }
        return lostAny ? a : joined
    }

    /// What item `item` of a level gained and lost, from that level's bits and adjustments.
    static func adjustment(
        of item: Int, touched: BitSet, dense: AdjustmentChunks, sparse: TreeDictionary<TrieKey, ItemAdjustment>
    ) -> ItemAdjustment? {
        guard touched.contains(item) else { return nil }
        return dense.isEmpty ? sparse[TrieKey(item)] : dense[item]
    }

    /// Bits per axis of the cells of level li's standalone list: a 512-pixel tile at its zoom, so a
    /// viewport at that zoom or finer covers a dozen cells or fewer (at most 16 bits, cells of 600 m).
    func cellBits(level li: Int) -> Int {
        max(0, min(base.levels[li].zoom, 16))
    }

    /// The cell of a mercator position in level li's standalone list.
    func cellKey(level li: Int, x: Double, y: Double) -> TrieKey {
        TrieKey(GridOrder.key(x: x, y: y, bits: cellBits(level: li)))
    }
}

/// What a base cluster gained or lost: points, and the sums of their mercator coordinates.
struct ItemAdjustment: Sendable, Hashable {
    var count: Int32 = 0
    var x: Double = 0
    var y: Double = 0

    static func add(_ count: Int32, _ x: Double, _ y: Double, to a: inout ItemAdjustment) {
        a.count += count
        a.x += Double(count) * x
        a.y += Double(count) * y
    }
}

/// An added point in a standalone list: what a query needs to test and draw it, and nothing counted
/// by reference, so a cell's list is a flat array a query reads straight through.
struct StandaloneEntry: Sendable {
    var id: UInt32
    /// The cluster holding it one level coarser than its list's (its parent there), -1 for none.
    var parentHolder: Int32
    var revision: UInt32
    /// Mercator position.
    var x: Double
    var y: Double
    var position: Coordinate
}

/// A point changed since the base was built, as it is now (its properties are apart, in
/// ``ClusterDelta/addedValues``).
struct AddedPoint: Sendable {
    /// Mercator position.
    var x: Double
    var y: Double
    var position: Coordinate
    var revision: UInt32
    /// The finest level below the raw one at which a base cluster holds it, -1 for none; the
    /// clusters holding it at coarser levels are that one's ancestors.
    var finest: Int32
    /// The cluster holding it at level `finest`.
    var holder: Int32
    /// Its contents code (``ClusterContents/Code``), 0 when clusters count nothing more.
    var code: ClusterContents.Code

    /// The coarsest level at which it is drawn as a point: the one below the finest that holds it.
    var standaloneFrom: Int { Int(finest) + 1 }
}
