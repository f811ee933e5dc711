/// A binary tree over the points whose every split follows the principal axis of the points beneath
/// it, cut breadth-first to at most ``Options/maxClusters`` features per viewport.
///
/// Layout: every node covers a contiguous run `order[start..<end]` of rows, so a node's leaves are a
/// slice and no node owns an allocation. Node data lives in flat arrays with fixed strides, indexed
/// by node number; the root is node 0 and a node's two children are `firstChild` and `firstChild + 1`.
/// A same-coordinate group (``SameCoordinateGroups``) enters the build as one weighted item, so it is
/// never split and ends as a single leaf whose members are spread around the shared point
/// (``SpreadPlacement``) exactly as the hierarchical index spreads them.
///
/// Node ids are `(depth + 32) << 32 | smallest point id under the node`: below 2^53, above every
/// point id (< 2^32) and above the hierarchical index's cluster ids (`(zoom + 1) << 32 | id`, zoom ≤
/// 24), and stable across rebuilds because they depend on content only.
///
/// See `docs/pca-tree.md` for the query semantics and how zoom enters them.
public struct PCATree: Clusterer {
    /// Most points a tree holds (node numbers and row positions stay within 32 bits).
    public static let maxPoints = 1 << 30

    public var algorithm: Algorithm { .pcaTree }
    public let dataset: Dataset
    public let aggregates: [Aggregate]
    /// The options it was built with. Used: `maxClusters` (features per viewport), `radius` and
    /// `extent` (a node no wider and no taller than `radius` pixels of an `extent`-pixel tile at the
    /// query's zoom stays one cluster), `maxZoom` (from `maxZoom + 1` no node is too small), `spread`,
    /// `spreadSpacing` and `sameCoordinateToleranceMetres`. `minZoom` and `minPoints`
    /// have no meaning for a tree cut by count.
    public let options: ClusterOptions

    /// Rows in tree order: node `k` covers `order[start(k)..<end(k)]`; a group's rows are in id order.
    let order: [UInt32]
    /// Where each row sits in ``order`` (inverse permutation), to find the node of a point id.
    let position: [UInt32]
    /// Per node: box, children, parent, size and smallest id, the part every cut visit reads.
    let nodes: [PCANode]
    /// Per node, stride 2: count-weighted centroid x, y in Mercator units.
    let centroids: [Double]
    /// Per node, stride 2: start and end of its run in ``order``.
    let ranges: [UInt32]
    /// Per node: distance from the root.
    let depths: [UInt16]
    /// Per node, stride `aggregates.count`: its points' reduced aggregate values.
    let nodeValues: [Double]
    /// Per row, stride `aggregates.count`: the row's own mapped aggregate values.
    let pointValues: [Double]
    /// Row lookup by dataset id; see ``IDLookup``.
    let lookup: IDLookup
    /// The dataset's same-coordinate groups; each is one leaf of the tree.
    let groups: SameCoordinateGroups
    /// Per row: its group, or -1.
    let groupOfRow: [Int32]
    /// Where spread members go.
    let placement: SpreadPlacement
    /// Every point's contents code in tree order; nil when clusters count nothing more.
    let tally: ContentTally?
    /// What clusters count besides their points (`--group-by`, `--flag`).
    public var contents: ClusterContents { tally?.contents ?? .none }

    /// Builds the tree.
    /// - Parameters:
    ///   - dataset: the points; ids must be distinct.
    ///   - options: clustering options, validated first (see ``options`` for those the tree uses).
    ///   - aggregates: values reduced over every node's points (see ``Aggregate``).
    /// - Throws: ``IndexError`` for a bad option, an unknown column or too many points.
    /// - Complexity: O(n · depth) time, O(n) memory; no allocation per node.
    public init(
        dataset: Dataset, options: ClusterOptions = ClusterOptions(), aggregates: [Aggregate] = [],
        contents: ClusterContents = .none
    ) throws(IndexError) {
        try options.validate()
        guard dataset.count <= PCATree.maxPoints else {
            throw .tooManyPoints(count: dataset.count, limit: PCATree.maxPoints)
        }
        let rowValues = try Aggregate.rowValues(aggregates, of: dataset)
        self.dataset = dataset
        self.options = options
        self.aggregates = aggregates
        let groups = SameCoordinateGroups(dataset: dataset, toleranceMetres: options.sameCoordinateToleranceMetres)
        self.groups = groups
        groupOfRow = groups.groupIndexByRow(rowCount: dataset.count)
        let largestGroup = (0..<groups.count).map { groups.size(of: $0) }.max() ?? 0
        placement = SpreadPlacement(
            mode: options.spread, spacing: options.spreadSpacing, preparedCount: max(largestGroup, 64))
        var builder = PCATreeBuilder(dataset: dataset, groups: groups, groupOfRow: groupOfRow)
        builder.build()
        order = builder.order
        nodes = builder.nodes
        centroids = builder.centroids
        ranges = builder.ranges
        depths = builder.depths
        var position = [UInt32](repeating: 0, count: dataset.count)
        for (i, row) in order.enumerated() { position[Int(row)] = UInt32(i) }
        self.position = position
        if contents.isEmpty {
            tally = nil
        } else {
            let coder = contents.coder(columns: dataset.properties.columns)
            let width = dataset.properties.columns.count
            let values = dataset.properties.values
            let codes = builder.order.map { row in coder.code(values[Int(row) * width..<(Int(row) + 1) * width]) }
            tally = ContentTally(contents: contents, codes: codes)
        }
        lookup = IDLookup(ids: dataset.ids)
        pointValues = rowValues
        nodeValues = PCATree.reduce(
            rowValues, aggregates: aggregates, order: builder.order, ranges: builder.ranges, nodes: builder.nodes)
    }

    /// Number of nodes, leaves included.
    public var nodeCount: Int { nodes.count }

    /// Bytes held by the tree's own arrays (not the dataset's).
    public var storedBytes: Int {
        order.count * 4 + position.count * 4 + nodes.count * MemoryLayout<PCANode>.stride + centroids.count * 8
            + ranges.count * 4 + depths.count * 2 + nodeValues.count * 8
            + pointValues.count * 8 + groupOfRow.count * 4 + lookup.storedBytes + groups.rows.count * 4
            + groups.starts.count * 4 + groups.centers.count * 16 + (tally?.storedBytes ?? 0)
    }

    /// The deepest node's depth (the root is 0); -1 for an empty tree.
    public var depth: Int { depths.max().map(Int.init) ?? -1 }

    /// The id a node is known by on the wire.
    @inlinable static func nodeID(depth: Int, minID: UInt32) -> FeatureID {
        FeatureID(depth + 32) << 32 | FeatureID(minID)
    }

    /// Per-node reductions of the rows' aggregate values; children are numbered after their parent,
    /// so one backwards sweep combines each node from nothing but already finished nodes.
    private static func reduce(
        _ points: [Double], aggregates: [Aggregate], order: [UInt32], ranges: [UInt32], nodes tree: [PCANode]
    ) -> [Double] {
        let k = aggregates.count
        guard k > 0 else { return [] }
        var nodes = [Double](repeating: 0, count: tree.count * k)
        for node in stride(from: tree.count - 1, through: 0, by: -1) {
            let child = Int(tree[node].firstChild)
            for c in 0..<k {
                let a = aggregates[c]
                if child >= 0 {
                    nodes[node * k + c] = a.combine(nodes[child * k + c], nodes[(child + 1) * k + c])
                } else {
                    var value = a.identity
                    for i in Int(ranges[2 * node])..<Int(ranges[2 * node + 1]) {
                        value = a.combine(value, points[Int(order[i]) * k + c])
                    }
                    nodes[node * k + c] = value
                }
            }
        }
        return nodes
    }
}

extension PCATree: ClusterStatistics {
    /// The tree serves every zoom from the same nodes, so it reports them all under zoom 0.
    public var itemsPerZoom: [Int: Int] { [0: nodeCount] }
}
