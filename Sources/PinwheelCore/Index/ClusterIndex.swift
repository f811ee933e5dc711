import Foundation

/// Supercluster-style hierarchical clustering: greedy clustering per integer zoom into count-weighted
/// centroids, every cluster at zoom z made of whole features of zoom z + 1, with same-coordinate groups
/// shown spread (``SpreadPlacement``) from the zoom at which nothing else shares their cluster.
///
/// Identity: a point's feature id is its dataset id; a cluster's is `(zoom + 1) << 32 | seed id`, where
/// zoom is the zoom that created it and the seed id is the dataset id of the point whose item seeded
/// it, so the same or slightly changed data gives unchanged clusters the same ids, and a cluster that
/// stays the same over several zooms keeps its id. Every feature's `parent` is the feature containing
/// it one zoom coarser (its own id when it is unchanged there).
///
/// Storage: one ``ZoomLevel`` per zoom from `minZoom` to `maxZoom + 1` (the raw points), flat arrays in
/// grid order; built in O(n) per zoom with radix sorts.
public final class ClusterIndex: Clusterer {
    /// Most points an index holds (feature slots keep 26 bits for an item).
    public static let maxPoints = (1 << 26) - 1

    public var algorithm: Algorithm { .hierarchical }
    public let dataset: Dataset
    public let aggregates: [Aggregate]
    /// The options it was built with.
    public let options: ClusterOptions
    /// The dataset's same-coordinate groups.
    public let groups: SameCoordinateGroups
    /// How groups are spread.
    public let placement: SpreadPlacement

    /// Levels for zooms minZoom ... maxZoom + 1, coarsest first.
    let levels: [ZoomLevel]
    /// Each level's cell directory: queries and nearest-cluster searches go straight to a run of cells.
    let cells: [CellDirectory]
    /// Each dataset row's mapped aggregate values, `aggregates.count` per row.
    let pointValues: [Double]
    /// Dataset rows in ascending id order; empty when ids increase with the row (row i having id i,
    /// or a filtered view's points, taken in order), where the ids themselves are searched.
    let rowsByID: [UInt32]
    /// What clusters count besides their points (`--group-by`, `--flag`).
    public var contents: ClusterContents { tally?.contents ?? .none }
    /// Every point's contents code in hierarchy order; nil when clusters count nothing more.
    let tally: ContentTally?
    /// The hierarchy order the tally follows (every level's runs kept); nil without a tally.
    let order: HierarchyOrder?

    /// Builds the hierarchy.
    /// - Parameters:
    ///   - dataset: the points; ids must be unique.
    ///   - options: clustering options, validated first.
    ///   - aggregates: values reduced over every cluster's points (see ``Aggregate``).
    ///   - contents: what every cluster counts besides its points (see ``ClusterContents``).
    ///   - concurrently: whether large zooms use a second thread from the shared pool; without, the
    ///     calling thread does their two parts one after the other, and the index is the same.
    /// - Throws: ``IndexError`` for a bad option, an unknown column or too many points.
    /// - Complexity: O(n) per zoom.
    public convenience init(
        dataset: Dataset, options: ClusterOptions = ClusterOptions(), aggregates: [Aggregate] = [],
        contents: ClusterContents = .none, concurrently: Bool = true
    ) throws(IndexError) {
        try self.init(
            dataset: dataset, options: options, aggregates: aggregates, contents: contents,
            parallelFrom: Parallel.minimumItems, concurrently: concurrently)
    }

    /// Builds the hierarchy, splitting zooms of at least `parallelFrom` items in two parts (tests
    /// lower it to check the split on small data), run on two threads when `concurrently`.
    init(
        dataset: Dataset, options: ClusterOptions, aggregates: [Aggregate], contents: ClusterContents = .none,
        parallelFrom: Int, concurrently: Bool = true
    ) throws(IndexError) {
        try options.validate()
        let n = dataset.count
        guard n <= ClusterIndex.maxPoints else { throw .tooManyPoints(count: n, limit: ClusterIndex.maxPoints) }
        let k = aggregates.count
        let pointValues = try Aggregate.rowValues(aggregates, of: dataset)
        let groups = SameCoordinateGroups(dataset: dataset, toleranceMetres: options.sameCoordinateToleranceMetres)
        let largestGroup = (0..<groups.count).map { groups.size(of: $0) }.max() ?? 0

        let buffers = BuildBuffers(capacity: n, stride: k, parallelFrom: parallelFrom, concurrently: concurrently)
        var finestFirst = [
            ClusterIndex.makeRawLevel(
                dataset, groups: groups, pointValues: pointValues, aggregates: aggregates, zoom: options.maxZoom + 1,
                bits: options.gridBits(clusteringZoom: options.maxZoom), buffers: buffers)
        ]
        let groupFirstIDs = (0..<groups.count).map { dataset.ids[Int(groups.rows(of: $0).first!)] }
        for z in stride(from: options.maxZoom, through: options.minZoom, by: -1) {
            let level = ClusterIndex.cluster(
                &finestFirst[finestFirst.count - 1], zoom: z, options: options, aggregates: aggregates,
                buffers: buffers,
                ids: dataset.ids, groupFirstIDs: groupFirstIDs)
            finestFirst.append(level)
        }
        let coarsest = finestFirst.count - 1
        finestFirst[coarsest].parents = [Int32](repeating: -1, count: finestFirst[coarsest].count)

        var rowsByID: [UInt32] = []
        if !dataset.ids.indices.dropFirst().allSatisfy({ dataset.ids[$0 - 1] < dataset.ids[$0] }) {
            var keys = dataset.ids.map { UInt64($0) }
            rowsByID = (0..<n).map { UInt32($0) }
            RadixSort.sort(keys: &keys, values: &rowsByID, bits: 32)
        }

        self.dataset = dataset
        self.options = options
        self.aggregates = aggregates
        self.groups = groups
        self.placement = SpreadPlacement(
            mode: options.spread, spacing: options.spreadSpacing, preparedCount: max(largestGroup, 64))
        self.levels = finestFirst.reversed()
        if contents.isEmpty {
            order = nil
            tally = nil
        } else {
            (order, tally) = ClusterIndex.tally(
                contents, of: dataset, levels: levels, groups: groups, parts: n >= parallelFrom ? 2 : 1,
                concurrently: concurrently)
        }
        self.cells = levels.map(CellDirectory.init)
        self.pointValues = pointValues
        self.rowsByID = rowsByID
    }

    /// Bytes held by the index's own arrays (not the dataset's).
    public var storedBytes: Int {
        levels.reduce(0) { $0 + $1.storedBytes } + cells.reduce(0) { $0 + $1.storedBytes } + pointValues.count * 8
            + rowsByID.count * 4 + groups.rows.count * 4
            + groups.starts.count * 4 + groups.centers.count * 16 + (tally?.storedBytes ?? 0)
    }

    /// The hierarchy order of `levels` and every point's contents code at its position in it. In two
    /// parts, one thread orders while the other codes the rows, which need nothing of the order.
    static func tally(
        _ contents: ClusterContents, of dataset: Dataset, levels: [ZoomLevel], groups: SameCoordinateGroups,
        parts: Int, concurrently: Bool
    ) -> (HierarchyOrder, ContentTally) {
        var made: HierarchyOrder?
        var byRow: [ClusterContents.Code] = []
        Parallel.run(parts, concurrently: concurrently) { part in
            if part == 0 { made = HierarchyOrder(levels: levels, groups: groups, ids: dataset.ids, keepingFrom: 0) }
            if part == 1 || parts == 1 {
                byRow = contents.coder(columns: dataset.properties.columns).codes(
                    of: dataset.properties, rows: dataset.count, concurrently: false)
            }
        }
        let order = made!
        var codes = [ClusterContents.Code](repeating: 0, count: order.rawItemAtPosition.count)
        codes.withUnsafeMutableBufferPointer { codes in
            order.positionOfRow.withUnsafeBufferPointer { positions in
                for row in 0..<byRow.count where positions[row] >= 0 { codes[Int(positions[row])] = byRow[row] }
            }
        }
        return (order, ContentTally(contents: contents, codes: codes))
    }

    /// The level a map zoom reads: the floor, clamped to minZoom ... maxZoom + 1.
    func levelIndex(zoom: Double) -> Int {
        let z = zoom.isFinite ? Int(max(-1, min(floor(zoom), Double(options.maxZoom + 1)))) : options.minZoom
        return max(z, options.minZoom) - options.minZoom
    }

    /// The zoom spread pins are laid out for at a map zoom: its floor, at least 0.
    static func spreadZoom(_ zoom: Double) -> Double {
        zoom.isFinite ? max(0, min(floor(zoom), 30)) : 0
    }

    /// The feature id of item i of a level, and whether the item is a same-coordinate group shown
    /// spread (whose members carry their own ids, so its own id is 0). For navigation; queries use
    /// ``QueryContext``.
    func identity(level li: Int, item i: Int) -> (id: FeatureID, isGroup: Bool) {
        dataset.ids.withUnsafeBufferPointer { ClusterIndex.identity(levels[li].meta[i], ids: $0) }
    }

    /// The feature id an item's word names, and whether it is a same-coordinate group.
    @inline(__always)
    static func identity(_ meta: UInt64, ids: UnsafeBufferPointer<UInt32>) -> (id: FeatureID, isGroup: Bool) {
        switch ItemMeta.tag(meta) {
        case 0: return (FeatureID(ids[Int(ItemMeta.payload(meta))]), false)
        case ItemMeta.groupTag: return (0, true)
        case let tag: return (tag << 32 | UInt64(ItemMeta.payload(meta)), false)
        }
    }
}
