import Foundation
import Testing

@testable import PinwheelCore

@Suite("PCATree")
struct PCATreeTests {
    // MARK: - Fixtures

    /// Points in gaussian blobs plus same-coordinate groups, ids shuffled away from row order.
    static func blobs(seed: UInt64, count: Int, groups: [Int] = [], shuffledIDs: Bool = true) -> Dataset {
        var rng = SplitMix64(seed: seed)
        var coordinates: [Double] = []
        coordinates.reserveCapacity(2 * count)
        let centres = (0..<6).map { _ in (lon: rng.nextUnit() * 340 - 170, lat: rng.nextUnit() * 140 - 70) }
        var row = 0
        for size in groups {
            let lon = rng.nextUnit() * 360 - 180
            let lat = rng.nextUnit() * 160 - 80
            for _ in 0..<size where row < count {
                coordinates.append(lon)
                coordinates.append(lat)
                row += 1
            }
        }
        while row < count {
            let c = centres[Int(rng.next() % UInt64(centres.count))]
            let spread = 0.01 + 20 * rng.nextUnit() * rng.nextUnit()
            let lon = BBox.wrap(c.lon + gaussian(&rng) * spread)
            let lat = max(-89, min(89, c.lat + gaussian(&rng) * spread / 2))
            coordinates.append(lon)
            coordinates.append(lat)
            row += 1
        }
        var ids = (0..<UInt32(count)).map { $0 * 3 + 7 }
        if shuffledIDs { ids.shuffle(using: &rng) }
        return Dataset(ids: ids, coordinates: coordinates)
    }

    static func gaussian(_ rng: inout SplitMix64) -> Double {
        let u = max(rng.nextUnit(), 1e-12)
        let v = rng.nextUnit()
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
    }

    static func randomBox(_ rng: inout SplitMix64) -> BBox {
        let width = pow(2, -7 * rng.nextUnit()) * 360
        let height = pow(2, -7 * rng.nextUnit()) * 170
        let west = rng.nextUnit() * 360 - 180
        let south = rng.nextUnit() * (170 - height) - 85
        return BBox.normalized(west: west, south: south, east: west + width, north: south + height)
    }

    /// Dataset ids of the points a feature stands for.
    static func pointIDs(of feature: Feature, in tree: PCATree) -> [FeatureID] {
        if feature.isPoint { return [feature.id] }
        return tree.leaves(of: feature.id, limit: Int.max, offset: 0)!.map(\.id)
    }

    /// Which returned feature holds each point; fails the test when a point is held twice.
    static func owners(_ features: [Feature], in tree: PCATree) -> [FeatureID: FeatureID] {
        var owner: [FeatureID: FeatureID] = [:]
        for feature in features {
            for id in pointIDs(of: feature, in: tree) {
                #expect(owner.updateValue(feature.id, forKey: id) == nil, "point \(id) held twice")
            }
        }
        return owner
    }

    // MARK: - Build

    @Test("two builds of the same data return identical features for the same viewports")
    func deterministic() throws {
        for seed in UInt64(1)...4 {
            let data = PCATreeTests.blobs(seed: seed, count: 3_000, groups: [2, 7, 40])
            let a = try PCATree(dataset: data)
            let b = try PCATree(dataset: data)
            var rng = SplitMix64(seed: seed)
            var fa: [Feature] = []
            var fb: [Feature] = []
            for _ in 0..<50 {
                let box = PCATreeTests.randomBox(&rng)
                a.features(in: box, zoom: 6, into: &fa)
                b.features(in: box, zoom: 6, into: &fb)
                #expect(fa == fb)
            }
            #expect(a.nodeCount == b.nodeCount)
        }
    }

    @Test("every node id is the depth plus 32 above the node's smallest point id, below 2^53")
    func nodeIDs() throws {
        let data = PCATreeTests.blobs(seed: 9, count: 2_000, groups: [3])
        let tree = try PCATree(dataset: data)
        var seen = Set<FeatureID>()
        for node in 0..<tree.nodeCount where tree.size(of: node) > 1 {
            let id = tree.wireID(node)
            let leaves = tree.leaves(of: id, limit: Int.max, offset: 0)!
            #expect(id == FeatureID(Int(tree.depths[node]) + 32) << 32 | leaves.map(\.id).min()!)
            #expect(id < 1 << 53 && id >> 32 >= 32)
            #expect(seen.insert(id).inserted)
            #expect(tree.node(of: id) == node)
        }
    }

    @Test("children partition their node: counts add up and leaves are the node's leaves")
    func childrenPartition() throws {
        let data = PCATreeTests.blobs(seed: 5, count: 1_500, groups: [4])
        let tree = try PCATree(dataset: data)
        for node in 0..<tree.nodeCount where tree.nodes[node].firstChild >= 0 {
            let id = tree.wireID(node)
            let children = tree.children(of: id)!
            #expect(children.count == 2)
            #expect(children.allSatisfy { $0.parent == id })
            #expect(children.reduce(0) { $0 + Int($1.count) } == tree.size(of: node))
            let fromChildren = children.flatMap { PCATreeTests.pointIDs(of: $0, in: tree) }.sorted()
            #expect(fromChildren == PCATreeTests.pointIDs(of: tree.feature(node: node), in: tree).sorted())
        }
    }

    @Test("every box holds exactly its points and every centroid is their mean in mercator units")
    func boxesAndCentroids() throws {
        let data = PCATreeTests.blobs(seed: 11, count: 1_000)
        let tree = try PCATree(dataset: data)
        for node in 0..<tree.nodeCount {
            var (minX, minY, maxX, maxY, sx, sy) = (
                Double.infinity, Double.infinity, -Double.infinity,
                -Double.infinity, 0.0, 0.0
            )
            for position in Int(tree.ranges[2 * node])..<Int(tree.ranges[2 * node + 1]) {
                let row = Int(tree.order[position])
                let x = Mercator.x(lon: data.lon(row))
                let y = Mercator.y(lat: data.lat(row))
                (minX, minY, maxX, maxY) = (min(minX, x), min(minY, y), max(maxX, x), max(maxY, y))
                sx += x
                sy += y
            }
            let n = Double(tree.size(of: node))
            let box = tree.nodes[node]
            #expect([box.minX, box.minY, box.maxX, box.maxY] == [minX, minY, maxX, maxY])
            #expect(abs(tree.centroids[2 * node] - sx / n) < 1e-12)
            #expect(abs(tree.centroids[2 * node + 1] - sy / n) < 1e-12)
        }
    }

    @Test("the principal axis is an eigenvector of the largest eigenvalue")
    func principalAxis() {
        var rng = SplitMix64(seed: 3)
        for _ in 0..<1_000 {
            let (a, b, c) = (rng.nextUnit(), rng.nextUnit() - 0.5, rng.nextUnit())
            let v = PCATreeBuilder.principalAxis(cxx: a, cxy: b, cyy: c)
            let length = (v.x * v.x + v.y * v.y).squareRoot()
            let (x, y) = (v.x / length, v.y / length)
            let lambda = (a + c) / 2 + (((a - c) / 2) * ((a - c) / 2) + b * b).squareRoot()
            #expect(abs(a * x + b * y - lambda * x) < 1e-12)
            #expect(abs(b * x + c * y - lambda * y) < 1e-12)
        }
        #expect(PCATreeBuilder.principalAxis(cxx: 0, cxy: 0, cyy: 2) == (0, 1))
    }

    @Test("points on one line and points on one mercator point still end in one-item leaves")
    func degenerate() throws {
        // A meridian line, and distinct latitudes beyond 85.05° that all project to y = 0.
        var coordinates: [Double] = []
        for i in 0..<200 { coordinates += [10, -60 + Double(i) * 0.5] }
        for i in 0..<50 { coordinates += [20, 86 + Double(i) * 0.05] }
        let data = Dataset(ids: (0..<250).map { UInt32($0) }, coordinates: coordinates)
        let tree = try PCATree(dataset: data)
        for node in 0..<tree.nodeCount where tree.nodes[node].firstChild < 0 { #expect(tree.size(of: node) == 1) }
        #expect(tree.nodeCount == 2 * 250 - 1)
    }

    @Test("from the depth limit on nodes split by halves, so depth stays within limit + log2(n)")
    func depthLimit() throws {
        let data = PCATreeTests.blobs(seed: 13, count: 1_000, shuffledIDs: false)
        let groups = SameCoordinateGroups(dataset: data)
        let byRow = groups.groupIndexByRow(rowCount: data.count)
        var limited = PCATreeBuilder(dataset: data, groups: groups, groupOfRow: byRow, pcaDepthLimit: 3)
        limited.build()
        #expect(Int(limited.depths.max()!) <= 3 + 10)
        #expect(limited.nodes.count == 2 * data.count - 1)
        for (node, record) in limited.nodes.enumerated() where record.firstChild >= 0 && limited.depths[node] >= 3 {
            let (a, b) = (limited.nodes[Int(record.firstChild)].size, limited.nodes[Int(record.firstChild) + 1].size)
            #expect(max(a, b) - min(a, b) <= 1, "node \(node) split \(a) / \(b)")
        }
        #expect(Set(limited.order) == Set(0..<UInt32(data.count)))
    }

    @Test("tree depth stays bounded for 1M points including 5,000 on one coordinate")
    func depthBounded() throws {
        var data = SyntheticGenerator(seed: 42).dataset(count: 1_000_000)
        for row in 0..<5_000 {
            data.coordinates[2 * row] = 2.35
            data.coordinates[2 * row + 1] = 48.85
        }
        let tree = try PCATree(dataset: data)
        // A balanced tree over ~950k items is 20 deep; mean splits of skewed blobs cost some more.
        #expect(tree.depth <= 48, "depth \(tree.depth)")
        let biggest = (0..<tree.nodeCount).filter { tree.nodes[$0].firstChild < 0 }.map { tree.size(of: $0) }.max()
        #expect(biggest! >= 5_000)
        var out: [Feature] = []
        tree.features(in: .world, zoom: 0, into: &out)
        #expect(out.reduce(0) { $0 + Int($1.count) } == 1_000_000)
    }

    // MARK: - Query

    @Test("a whole-world query holds every point in exactly one feature")
    func wholeWorld() throws {
        for seed in UInt64(1)...5 {
            let data = PCATreeTests.blobs(seed: seed, count: 2_500, groups: [2, 30])
            for limit in [1, 2, 5, 32, 100] {
                let tree = try PCATree(dataset: data, options: .init(maxClusters: limit))
                var out: [Feature] = []
                tree.features(in: .world, zoom: 0, into: &out)
                #expect(out.count <= limit)
                #expect(PCATreeTests.owners(out, in: tree).count == data.count)
                #expect(out.reduce(0) { $0 + Int($1.count) } == data.count)
            }
        }
    }

    @Test("every point inside a viewport is in exactly one feature, and never more than maxClusters")
    func viewportCoverage() throws {
        for seed in UInt64(1)...4 {
            let data = PCATreeTests.blobs(seed: seed, count: 2_000, groups: [3, 12])
            var rng = SplitMix64(seed: seed &* 77)
            let limit = 1 + Int(rng.next() % 60)
            let tree = try PCATree(dataset: data, options: .init(maxClusters: limit))
            var out: [Feature] = []
            for _ in 0..<60 {
                let box = PCATreeTests.randomBox(&rng)
                tree.features(in: box, zoom: rng.nextUnit() * 20, into: &out)
                #expect(out.count <= limit)
                let owner = PCATreeTests.owners(out, in: tree)
                for row in 0..<data.count where box.contains(lat: data.lat(row), lon: data.lon(row)) {
                    #expect(owner[FeatureID(data.ids[row])] != nil, "point \(data.ids[row]) not drawn")
                }
            }
        }
    }

    @Test("zooming in only ever replaces a feature by its descendants")
    func zoomInRefines() throws {
        for seed in UInt64(1)...4 {
            let data = PCATreeTests.blobs(seed: seed, count: 3_000, groups: [3, 6, 25])
            let tree = try PCATree(dataset: data)
            var rng = SplitMix64(seed: seed)
            var outer: [Feature] = []
            var inner: [Feature] = []
            for _ in 0..<10 {
                // A walk of shrinking boxes around a data point, as a map zooming in around it does.
                let row = Int(rng.next() % UInt64(data.count))
                let centre = (x: Mercator.x(lon: data.lon(row)), y: Mercator.y(lat: data.lat(row)))
                var half = 0.6
                var zoom = 0.0
                tree.features(in: PCATreeTests.box(around: centre, half: half), zoom: zoom, into: &outer)
                while half > 1e-7 {
                    half *= 0.5 + 0.45 * rng.nextUnit()
                    zoom += 0.3
                    tree.features(in: PCATreeTests.box(around: centre, half: half), zoom: zoom, into: &inner)
                    let before = PCATreeTests.owners(outer, in: tree)
                    for feature in inner {
                        let holders = Set(PCATreeTests.pointIDs(of: feature, in: tree).map { before[$0] })
                        #expect(holders.count == 1 && holders.first! != nil, "feature \(feature.id) merged")
                    }
                    swap(&outer, &inner)
                }
            }
        }
    }

    @Test("raising the zoom on a fixed viewport only ever splits, and never opens a node within radius")
    func zoomRule() throws {
        for seed in UInt64(1)...3 {
            let data = PCATreeTests.blobs(seed: seed, count: 3_000, groups: [4])
            let tree = try PCATree(dataset: data, options: .init(maxClusters: 60))
            var rng = SplitMix64(seed: seed)
            var before: [Feature] = []
            var after: [Feature] = []
            for _ in 0..<10 {
                let box = PCATreeTests.randomBox(&rng)
                var zoom = 0.0
                tree.features(in: box, zoom: zoom, into: &before)
                while zoom < 18 {
                    zoom += 0.25 + rng.nextUnit()
                    tree.features(in: box, zoom: zoom, into: &after)
                    let owner = PCATreeTests.owners(before, in: tree)
                    for feature in after {
                        let holders = Set(PCATreeTests.pointIDs(of: feature, in: tree).map { owner[$0] })
                        #expect(holders.count == 1 && holders.first! != nil, "feature \(feature.id) merged")
                        // Its parent was opened, so the parent is wider than radius at this zoom (a
                        // spread group's box is a point: its members are laid out in pixels instead).
                        guard zoom < 17, feature.anchor == nil, let parent = feature.parent, parent != feature.id,
                            let node = tree.node(of: parent)
                        else { continue }
                        #expect(tree.nodes[node].width * 512 * pow(2, zoom) > 40)
                    }
                    swap(&before, &after)
                }
            }
        }
    }

    static func box(around centre: (x: Double, y: Double), half: Double) -> BBox {
        BBox.normalized(
            west: Mercator.lon(x: centre.x - half), south: Mercator.lat(y: min(1, centre.y + half)),
            east: Mercator.lon(x: centre.x + half), north: Mercator.lat(y: max(0, centre.y - half)))
    }

    @Test("a feature's parent is what holds it in the same view one zoom out, or itself if unchanged there")
    func parents() throws {
        let data = PCATreeTests.blobs(seed: 8, count: 3_000, groups: [2, 5, 9])
        let tree = try PCATree(dataset: data)
        var rng = SplitMix64(seed: 8)
        var fine: [Feature] = []
        var coarse: [Feature] = []
        var splits = 0
        for _ in 0..<60 {
            let row = Int(rng.next() % UInt64(data.count))
            let centre = (x: Mercator.x(lon: data.lon(row)), y: Mercator.y(lat: data.lat(row)))
            let half = pow(2, -8 * rng.nextUnit()) * 0.3
            let zoom = 1 + rng.nextUnit() * 16
            tree.features(in: PCATreeTests.box(around: centre, half: half), zoom: zoom, into: &fine)
            tree.features(in: PCATreeTests.box(around: centre, half: 2 * half), zoom: zoom - 1, into: &coarse)
            let above = Dictionary(uniqueKeysWithValues: coarse.map { ($0.id, $0) })
            for feature in fine {
                let parent = try #require(feature.parent)
                let holder = try #require(above[parent], "parent \(parent) of \(feature.id) is not drawn one zoom out")
                let points = Set(PCATreeTests.pointIDs(of: holder, in: tree))
                #expect(PCATreeTests.pointIDs(of: feature, in: tree).allSatisfy(points.contains))
                if parent != feature.id { splits += 1 }
            }
        }
        #expect(splits > 0)
    }

    @Test("a viewport across the antimeridian finds the points on both sides")
    func antimeridian() throws {
        var coordinates: [Double] = []
        for i in 0..<40 { coordinates += [175 + Double(i) * 0.1, Double(i % 7)] }
        for i in 0..<40 { coordinates += [-179 + Double(i) * 0.1, Double(i % 5)] }
        for i in 0..<40 { coordinates += [Double(i), 10] }
        let data = Dataset(ids: (0..<120).map { UInt32($0) }, coordinates: coordinates)
        let tree = try PCATree(dataset: data, options: .init(maxClusters: 100))
        var out: [Feature] = []
        tree.features(in: BBox(west: 170, south: -5, east: -170, north: 15), zoom: 17, into: &out)
        let ids = Set(out.flatMap { PCATreeTests.pointIDs(of: $0, in: tree) })
        #expect(ids == Set((0..<80).map { FeatureID($0) }))
        #expect(out.count == 80)
    }

    @Test("an empty dataset answers nothing and knows no ids")
    func empty() throws {
        let tree = try PCATree(dataset: Dataset(ids: [], coordinates: []))
        var out = [Feature(id: 1, lat: 0, lon: 0, count: 1, parent: nil, row: 0)]
        tree.features(in: .world, zoom: 3, into: &out)
        #expect(out.isEmpty)
        #expect(tree.children(of: 1) == nil)
        #expect(tree.leaves(of: 33 << 32, limit: 10, offset: 0) == nil)
        #expect(tree.expansion(of: 5, zoom: 2) == nil)
        #expect(tree.depth == -1)
    }

    @Test("a one-point dataset returns the point as its own parent wherever it is in view")
    func onePoint() throws {
        let data = Dataset(ids: [77], coordinates: [13.4, 52.5])
        let tree = try PCATree(dataset: data)
        var out: [Feature] = []
        tree.features(in: .world, zoom: 0, into: &out)
        #expect(out == [Feature(id: 77, lat: 52.5, lon: 13.4, count: 1, parent: 77, row: 0)])
        tree.features(in: BBox(west: -10, south: -10, east: 10, north: 10), zoom: 4, into: &out)
        #expect(out.isEmpty)
        #expect(tree.children(of: 77) == [])
        #expect(tree.expansion(of: 77, zoom: 9) == .zoom(9))
    }

    // MARK: - Same-coordinate groups

    @Test("a group alone in view is spread exactly as SpreadPlacement places it, anchored at its point")
    func groupSpread() throws {
        let data = Dataset(
            ids: [9, 4, 6, 5, 8], coordinates: Array(repeating: [2.35, 48.85], count: 5).flatMap { $0 })
        let tree = try PCATree(dataset: data)
        var out: [Feature] = []
        tree.features(in: .world, zoom: 12, into: &out)
        var expected: [Coordinate] = []
        SpreadPlacement().place(around: Coordinate(lat: 48.85, lon: 2.35), count: 5, zoom: 12, into: &expected)
        #expect(out.map(\.id) == [4, 5, 6, 8, 9])
        #expect(out.map { Coordinate(lat: $0.lat, lon: $0.lon) } == expected)
        // Spread one zoom out as well, so each member is its own parent.
        #expect(out.allSatisfy { $0.anchor == Coordinate(lat: 48.85, lon: 2.35) && $0.parent == $0.id })
    }

    @Test("a group too large for maxClusters stays one cluster whose expansion is its spread")
    func largeGroup() throws {
        let data = PCATreeTests.blobs(seed: 2, count: 5_100, groups: [5_000])
        let tree = try PCATree(dataset: data)
        var out: [Feature] = []
        tree.features(in: .world, zoom: 0, into: &out)
        #expect(out.count <= 32)
        let leaf = try #require(
            (0..<tree.nodeCount).first { tree.nodes[$0].firstChild < 0 && tree.size(of: $0) == 5_000 })
        let group = tree.feature(node: leaf)
        #expect(group.count == 5_000 && group.lat == data.lat(0) && group.lon == data.lon(0))
        guard case .spread(let members) = tree.expansion(of: group.id, zoom: 15) else {
            Issue.record("expected a spread")
            return
        }
        #expect(members.count == 5_000)
        #expect(Set(members.map(\.id)).count == 5_000)
        #expect(members.allSatisfy { $0.parent == group.id && $0.anchor != nil })
        // A member's expansion is its group's spread too.
        #expect(tree.expansion(of: members[0].id, zoom: 15) == .spread(members))
    }

    @Test("with a tolerance, a group's box holds all its members, so a viewport holding one meets it")
    func toleranceGroups() throws {
        // A cluster of points a few metres apart, grouped within 50 m, plus scattered points.
        var coordinates: [Double] = []
        for i in 0..<12 { coordinates += [2.35 + Double(i) * 0.00005, 48.85 + Double(i % 3) * 0.00004] }
        for i in 0..<50 { coordinates += [-60 + Double(i) * 2.5, -30 + Double(i % 9) * 6] }
        let data = Dataset(ids: (0..<62).map { UInt32($0) }, coordinates: coordinates)
        let tree = try PCATree(dataset: data, options: .init(sameCoordinateToleranceMetres: 50))
        let leaf = try #require((0..<tree.nodeCount).first { tree.nodes[$0].firstChild < 0 && tree.size(of: $0) > 1 })
        #expect(tree.size(of: leaf) == 12)
        for node in 0..<tree.nodeCount {
            for position in Int(tree.ranges[2 * node])..<Int(tree.ranges[2 * node + 1]) {
                let row = Int(tree.order[position])
                let (x, y) = (Mercator.x(lon: data.lon(row)), Mercator.y(lat: data.lat(row)))
                #expect(x >= tree.nodes[node].minX && x <= tree.nodes[node].maxX)
                #expect(y >= tree.nodes[node].minY && y <= tree.nodes[node].maxY)
            }
        }
        // A small viewport around the last member only, away from the seed.
        var out: [Feature] = []
        tree.features(in: BBox(west: 2.35054, south: 48.8500, east: 2.35056, north: 48.8501), zoom: 20, into: &out)
        #expect(out.reduce(0) { $0 + Int($1.count) } == 12)
    }

    // MARK: - Navigation

    @Test("a cluster's expansion zoom is the first zoom at which the typical viewport opens it")
    func expansionZoom() throws {
        let data = PCATreeTests.blobs(seed: 4, count: 4_000)
        let tree = try PCATree(dataset: data)
        var out: [Feature] = []
        tree.features(in: .world, zoom: 0, into: &out)
        for cluster in out where !cluster.isPoint {
            guard case .zoom(let zoom) = tree.expansion(of: cluster.id, zoom: 0) else {
                Issue.record("expected a zoom")
                continue
            }
            // Asked from a deeper zoom, expanding still zooms in.
            #expect(tree.expansion(of: cluster.id, zoom: zoom + 2.5) == .zoom(min(24, zoom + 3)))
            let centre = (x: Mercator.x(lon: cluster.lon), y: Mercator.y(lat: cluster.lat))
            for (z, shown) in [(zoom, false), (zoom - 1, true)] where z >= 0 {
                let worldPixels = 256 * pow(2, z)
                let box = BBox.normalized(
                    west: Mercator.lon(x: centre.x - 640 / worldPixels),
                    south: Mercator.lat(y: min(1, centre.y + 400 / worldPixels)),
                    east: Mercator.lon(x: centre.x + 640 / worldPixels),
                    north: Mercator.lat(y: max(0, centre.y - 400 / worldPixels)))
                tree.features(in: box, zoom: z, into: &out)
                #expect(out.contains { $0.id == cluster.id } == shown, "cluster \(cluster.id) at zoom \(z)")
            }
        }
    }

    @Test("leaves page through a node's points in a stable order")
    func leavesPaging() throws {
        let data = PCATreeTests.blobs(seed: 6, count: 1_000)
        let tree = try PCATree(dataset: data)
        let root = tree.wireID(0)
        let all = tree.leaves(of: root, limit: 2_000, offset: 0)!
        #expect(all.count == 1_000 && Set(all.map(\.id)).count == 1_000)
        let pages = stride(from: 0, to: 1_000, by: 64).flatMap { tree.leaves(of: root, limit: 64, offset: $0)! }
        #expect(pages == all)
        #expect(tree.leaves(of: root, limit: 10, offset: 5_000) == [])
        #expect(tree.leaves(of: 40 << 32 | 123_456, limit: 1, offset: 0) == nil)
    }

    @Test("every node's and every zoom's sum, min, max and mean equal those over the leaves it holds")
    func aggregates() throws {
        let data = AggregateOracle.dataset(PCATreeTests.blobs(seed: 10, count: 800, groups: [6]), seed: 10)
        let tree = try PCATree(dataset: data, aggregates: AggregateOracle.aggregates)
        for node in 0..<tree.nodeCount {
            let feature = tree.feature(node: node)
            let rows = tree.leaves(of: feature.id, limit: Int.max, offset: 0)!.map { Int($0.row) }
            let values = tree.aggregateValues(of: feature)
            #expect(AggregateOracle.matches(values, count: UInt32(rows.count), rows: rows, data))
        }
        var out: [Feature] = []
        for zoom in 0...16 {
            tree.features(in: .world, zoom: Double(zoom), into: &out)
            for f in out {
                let leaves = f.isPoint ? [] : tree.leaves(of: f.id, limit: Int.max, offset: 0)!
                let rows = f.isPoint ? [Int(f.row)] : leaves.map { Int($0.row) }
                #expect(AggregateOracle.matches(tree.aggregateValues(of: f), count: f.count, rows: rows, data))
            }
        }
        #expect(throws: IndexError.unknownAggregateColumn(name: "nope", available: ["name", "pop"])) {
            try PCATree(dataset: data, aggregates: [Aggregate(name: "x", operation: .max, column: "nope")])
        }
    }

    @Test("the clusterer factory builds a pca-tree with the options' maxClusters")
    func factory() throws {
        let data = PCATreeTests.blobs(seed: 12, count: 2_000)
        let clusterer = try ClustererFactory.make(.pcaTree, dataset: data, options: .init(maxClusters: 7))
        #expect(clusterer.algorithm == .pcaTree)
        var fromFactory: [Feature] = []
        var direct: [Feature] = []
        clusterer.features(in: .world, zoom: 1, into: &fromFactory)
        try PCATree(dataset: data, options: .init(maxClusters: 7)).features(in: .world, zoom: 1, into: &direct)
        #expect(fromFactory == direct && direct.count <= 7 && !direct.isEmpty)
    }

    @Test("bad options are refused with the offending value")
    func badOptions() {
        let data = Dataset(ids: [1], coordinates: [0, 0])
        #expect(throws: IndexError.invalidOption(name: "maxClusters", value: "0", expected: "1...4096")) {
            try PCATree(dataset: data, options: .init(maxClusters: 0))
        }
        #expect(throws: IndexError.self) {
            try PCATree(dataset: data, options: .init(sameCoordinateToleranceMetres: -1))
        }
    }
}
