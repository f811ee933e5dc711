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
    public let sumColumns: [String]
    /// The options it was built with.
    public let options: ClusterOptions
    /// The dataset's same-coordinate groups.
    public let groups: SameCoordinateGroups
    /// How groups are spread.
    public let placement: SpreadPlacement

    /// Levels for zooms minZoom ... maxZoom + 1, coarsest first.
    let levels: [ZoomLevel]
    /// Per raw item (index on the raw level): dataset row, or -(g + 1) for same-coordinate group g.
    let rawRefs: [Int32]
    /// Per raw item: dataset id (a group's lowest member id).
    let rawIDs: [UInt32]
    /// Values of the summed columns per dataset row, `sumColumns.count` per row.
    let pointSums: [Double]
    /// Dataset rows in ascending id order; empty when row i has id i.
    let rowsByID: [UInt32]

    /// Builds the hierarchy.
    /// - Parameters:
    ///   - dataset: the points; ids must be unique.
    ///   - options: clustering options, validated first.
    ///   - sumColumns: numeric property columns to sum into every cluster (blank or unparsable cells
    ///     count 0).
    /// - Throws: ``IndexError`` for a bad option, an unknown column or too many points.
    /// - Complexity: O(n) per zoom.
    public init(dataset: Dataset, options: ClusterOptions = ClusterOptions(), sumColumns: [String] = [])
        throws(IndexError)
    {
        try options.validate()
        let n = dataset.count
        guard n <= ClusterIndex.maxPoints else { throw .tooManyPoints(count: n, limit: ClusterIndex.maxPoints) }
        let k = sumColumns.count
        var pointSums = [Double](repeating: 0, count: n * k)
        for (c, name) in sumColumns.enumerated() {
            guard let column = dataset.properties.numericColumn(named: name, rows: n) else {
                throw .unknownSumColumn(name: name, available: dataset.properties.columns)
            }
            for row in 0..<n { pointSums[row * k + c] = column[row] }
        }
        let groups = SameCoordinateGroups(dataset: dataset, toleranceMetres: options.sameCoordinateToleranceMetres)
        let largestGroup = (0..<groups.count).map { groups.size(of: $0) }.max() ?? 0

        let raw = ClusterIndex.makeRawItems(
            dataset, groups: groups, pointSums: pointSums, stride: k, zoom: options.maxZoom + 1,
            bits: options.gridBits(clusteringZoom: options.maxZoom))
        var finestFirst = [raw.level]
        for z in stride(from: options.maxZoom, through: options.minZoom, by: -1) {
            let level = ClusterIndex.cluster(&finestFirst[finestFirst.count - 1], zoom: z, options: options, stride: k)
            finestFirst.append(level)
        }
        let coarsest = finestFirst.count - 1
        finestFirst[coarsest].parents = [Int32](repeating: -1, count: finestFirst[coarsest].count)

        var rowsByID: [UInt32] = []
        if !dataset.ids.enumerated().allSatisfy({ UInt32($0.offset) == $0.element }) {
            var keys = dataset.ids.map { UInt64($0) }
            rowsByID = (0..<n).map { UInt32($0) }
            RadixSort.sort(keys: &keys, values: &rowsByID, bits: 32)
        }

        self.dataset = dataset
        self.options = options
        self.sumColumns = sumColumns
        self.groups = groups
        self.placement = SpreadPlacement(
            mode: options.spread, spacing: options.spreadSpacing, preparedCount: max(largestGroup, 64))
        self.levels = finestFirst.reversed()
        self.rawRefs = raw.refs
        self.rawIDs = raw.ids
        self.pointSums = pointSums
        self.rowsByID = rowsByID
    }

    /// Items stored per zoom, minZoom first (the last entry is the raw level, zoom maxZoom + 1).
    public var itemsPerZoom: [Int] { levels.map(\.count) }

    /// Bytes held by the index's own arrays (not the dataset's).
    public var storedBytes: Int {
        levels.reduce(0) { $0 + $1.storedBytes } + rawRefs.count * 4 + rawIDs.count * 4 + pointSums.count * 8
            + rowsByID.count * 4 + groups.rows.count * 4 + groups.starts.count * 4 + groups.centers.count * 16
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

    public func features(in bbox: BBox, zoom: Double, into out: inout [Feature]) {
        out.removeAll(keepingCapacity: true)
        guard dataset.count > 0 else { return }
        let li = levelIndex(zoom: zoom)
        var scratch = SpreadScratch()
        let minY = Mercator.y(lat: bbox.north)
        let maxY = Mercator.y(lat: bbox.south)
        let spreadZoom = ClusterIndex.spreadZoom(zoom)
        if bbox.crossesAntimeridian {
            let west = MercatorRect(minX: Mercator.x(lon: bbox.west), minY: minY, maxX: 1, maxY: maxY)
            let east = MercatorRect(minX: 0, minY: minY, maxX: Mercator.x(lon: bbox.east), maxY: maxY)
            scan(level: li, rect: west, spreadZoom: spreadZoom, scratch: &scratch, into: &out)
            scan(level: li, rect: east, spreadZoom: spreadZoom, scratch: &scratch, into: &out)
        } else {
            let rect = MercatorRect(
                minX: Mercator.x(lon: bbox.west), minY: minY, maxX: Mercator.x(lon: bbox.east), maxY: maxY)
            scan(level: li, rect: rect, spreadZoom: spreadZoom, scratch: &scratch, into: &out)
        }
    }

    /// Appends the features of every item of a level inside a rectangle.
    ///
    /// Items are in cell-key order, so the rectangle's cells form one run per grid row: the scan jumps
    /// (galloping search) to the first cell of the rectangle in a row, reads until it leaves the
    /// rectangle's columns, and jumps to the next row.
    /// - Complexity: O(r · log n + k) for r grid rows and k items in the rectangle's cells.
    func scan(
        level li: Int, rect: MercatorRect, spreadZoom: Double, scratch: inout SpreadScratch, into out: inout [Feature]
    ) {
        let level = levels[li]
        let n = level.count
        guard n > 0, rect.minX <= rect.maxX, rect.minY <= rect.maxY else { return }
        let bits = level.gridBits
        let side = 1 << bits
        let scale = Double(side)
        func cell(_ v: Double) -> Int { max(0, min(Int(v * scale), side - 1)) }
        let (columnLo, columnHi) = (cell(rect.minX), cell(rect.maxX))
        let (rowLo, rowHi) = (cell(rect.minY), cell(rect.maxY))
        level.xy.withUnsafeBufferPointer { xy in
            func key(_ i: Int) -> UInt64 { GridOrder.key(x: xy[2 * i], y: xy[2 * i + 1], bits: bits) }
            /// First index at or after `from` whose key is at least `target`.
            func lowerBound(from: Int, _ target: UInt64) -> Int {
                var lo = from
                var step = 1
                var hi = from
                while hi < n && key(hi) < target {
                    lo = hi + 1
                    hi += step
                    step <<= 1
                }
                hi = min(hi, n)
                while lo < hi {
                    let mid = (lo + hi) >> 1
                    if key(mid) < target { lo = mid + 1 } else { hi = mid }
                }
                return lo
            }
            let shift = UInt64(bits)
            var row = rowLo
            var i = lowerBound(from: 0, UInt64(row) << shift | UInt64(columnLo))
            while i < n {
                let k = key(i)
                let itemRow = Int(k >> shift)
                let itemColumn = Int(k & ((1 << shift) - 1))
                if itemRow > rowHi { break }
                // Rows without items in the rectangle are skipped by the search.
                row = itemRow
                if itemColumn < columnLo {
                    i = lowerBound(from: i, UInt64(row) << shift | UInt64(columnLo))
                    continue
                }
                if itemColumn > columnHi {
                    row += 1
                    if row > rowHi { break }
                    i = lowerBound(from: i, UInt64(row) << shift | UInt64(columnLo))
                    continue
                }
                if rect.contains(x: xy[2 * i], y: xy[2 * i + 1]) {
                    emit(level: li, item: i, spreadZoom: spreadZoom, scratch: &scratch, into: &out)
                }
                i += 1
            }
        }
    }

    /// Per-query room for spread positions, allocated only when a group is in view.
    struct SpreadScratch {
        var positions: [Coordinate] = []
    }

    /// The feature id of an item, and whether the item is a same-coordinate group shown spread (whose
    /// members carry their own ids).
    @inline(__always) func identity(level li: Int, item i: Int) -> (id: FeatureID, isGroup: Bool) {
        let ref = levels[li].ref(i)
        let origin = Int(ref & ZoomLevel.originMask)
        let zoomTag = ref >> ZoomLevel.originBits
        if zoomTag > 0 { return (UInt64(zoomTag) << 32 | UInt64(rawIDs[origin]), false) }
        return (UInt64(rawIDs[origin]), rawRefs[origin] < 0)
    }

    /// Appends the feature(s) item i of a level stands for: a cluster, a point, or a group's spread members.
    func emit(level li: Int, item i: Int, spreadZoom: Double, scratch: inout SpreadScratch, into out: inout [Feature]) {
        let level = levels[li]
        let (id, isGroup) = identity(level: li, item: i)
        var parent: FeatureID?
        var membersAreOwnParents = false
        let p = Int(level.parents[i])
        if p >= 0 {
            let above = identity(level: li - 1, item: p)
            parent = above.id
            // A group whose parent is a group is the same group passed through: there its members are
            // shown spread too, each its own parent.
            membersAreOwnParents = above.isGroup
        }
        let ref = level.ref(i)
        let origin = Int(ref & ZoomLevel.originMask)
        if ref >> ZoomLevel.originBits > 0 {
            out.append(
                Feature(
                    id: id, lat: Mercator.lat(y: level.xy[2 * i + 1]), lon: Mercator.lon(x: level.xy[2 * i]),
                    count: level.counts[i], parent: parent, row: -1, slot: Int32(li << 26 | i)))
        } else if !isGroup {
            let row = Int(rawRefs[origin])
            out.append(
                Feature(
                    id: id, lat: dataset.lat(row), lon: dataset.lon(row), count: 1, parent: parent, row: Int32(row)))
        } else {
            let g = Int(-rawRefs[origin] - 1)
            appendSpread(
                group: g, zoom: spreadZoom, parent: parent, membersAreOwnParents: membersAreOwnParents,
                scratch: &scratch, into: &out)
        }
    }

    /// Appends group g's members spread for a zoom, each with `parent`, or its own id as parent.
    func appendSpread(
        group g: Int, zoom: Double, parent: FeatureID?, membersAreOwnParents: Bool, scratch: inout SpreadScratch,
        into out: inout [Feature]
    ) {
        let members = groups.rows(of: g)
        placement.place(around: groups.centers[g], count: members.count, zoom: zoom, into: &scratch.positions)
        for (k, row32) in members.enumerated() {
            let row = Int(row32)
            let id = FeatureID(dataset.ids[row])
            let at = scratch.positions[k]
            out.append(
                Feature(
                    id: id, lat: at.lat, lon: at.lon, count: 1, parent: membersAreOwnParents ? id : parent,
                    anchor: Coordinate(lat: dataset.lat(row), lon: dataset.lon(row)), row: Int32(row)))
        }
    }
}
