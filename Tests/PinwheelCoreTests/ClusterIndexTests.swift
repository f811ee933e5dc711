import Foundation
import Testing

@testable import PinwheelCore

@Suite("Cluster index")
struct ClusterIndexTests {
    /// Synthetic blobs with same-coordinate groups, plus uniform points, latitudes within ±85.
    static func dataset(seed: UInt64, count: Int) -> Dataset {
        let blobs = SyntheticGenerator(seed: seed, blobCount: 40).dataset(count: count)
        var rng = SplitMix64(seed: seed &+ 1000)
        var coordinates = blobs.coordinates
        for _ in 0..<(count / 5) {
            coordinates += [rng.nextUnit() * 360 - 180, rng.nextUnit() * 170 - 85]
        }
        let n = coordinates.count / 2
        // Ids deliberately not equal to rows.
        return Dataset(ids: (0..<n).map { UInt32(3 * $0 + 11) }, coordinates: coordinates)
    }

    /// The index built on one thread, with every zoom of 50 items or more split over two threads, and
    /// with the same split run part after part on the calling thread (as compactions build).
    static func builds(_ data: Dataset) throws -> [ClusterIndex] {
        [
            try ClusterIndex(dataset: data),
            try ClusterIndex(dataset: data, options: ClusterOptions(), aggregates: [], parallelFrom: 50),
            try ClusterIndex(
                dataset: data, options: ClusterOptions(), aggregates: [], parallelFrom: 50, concurrently: false),
        ]
    }

    static func world(_ index: ClusterIndex, _ zoom: Double) -> [Feature] {
        var out: [Feature] = []
        index.features(in: .world, zoom: zoom, into: &out)
        return out
    }

    /// The dataset ids a feature stands for.
    static func leafIDs(_ index: ClusterIndex, _ feature: Feature) -> [FeatureID] {
        index.leaves(of: feature.id, limit: Int.max, offset: 0)!.map(\.id)
    }

    @Test("every point is in exactly one feature per zoom over the whole world, and counts add up")
    func partition() throws {
        for seed in UInt64(1)...4 {
            let data = Self.dataset(seed: seed, count: 2500)
            let all = Set(data.ids.map { FeatureID($0) })
            for index in try Self.builds(data) {
                for zoom in 0...18 {
                    let features = Self.world(index, Double(zoom))
                    #expect(features.reduce(0) { $0 + Int($1.count) } == data.count)
                    var seen: [FeatureID] = []
                    for f in features { seen += f.count == 1 && f.isPoint ? [f.id] : Self.leafIDs(index, f) }
                    #expect(seen.count == data.count && Set(seen) == all, "zoom \(zoom)")
                    #expect(Set(features.map(\.id)).count == features.count, "ids unique at zoom \(zoom)")
                }
            }
        }
    }

    @Test("clusters at zoom z are unions of whole features of zoom z + 1, and parents point one zoom up")
    func wholeChildren() throws {
        let data = Self.dataset(seed: 9, count: 3000)
        for index in try Self.builds(data) {
            #expect(Self.world(index, 0).allSatisfy { $0.parent == nil })
            for zoom in 0...17 {
                let coarse = Self.world(index, Double(zoom))
                let fine = Self.world(index, Double(zoom + 1))
                let coarseByID = Dictionary(uniqueKeysWithValues: coarse.map { ($0.id, $0) })
                var countUnder: [FeatureID: Int] = [:]
                var childrenOf: [FeatureID: Set<FeatureID>] = [:]
                for f in fine {
                    let parent = try #require(f.parent)
                    #expect(coarseByID[parent] != nil, "parent of \(f.id) at zoom \(zoom + 1)")
                    countUnder[parent, default: 0] += Int(f.count)
                    childrenOf[parent, default: []].insert(f.id)
                }
                for c in coarse {
                    #expect(countUnder[c.id] == Int(c.count), "cluster \(c.id) at zoom \(zoom)")
                    // A cluster unchanged one zoom finer is its own only child there; children(of:) names the
                    // features of the zoom where it really splits.
                    if c.row < 0 && childrenOf[c.id] != [c.id] {
                        let children = try #require(index.children(of: c.id))
                        #expect(Set(children.map(\.id)) == childrenOf[c.id])
                        #expect(children.reduce(0) { $0 + Int($1.count) } == Int(c.count))
                    }
                }
            }
        }
    }

    @Test("range queries return exactly what a linear scan of the whole world finds")
    func rangeMatchesScan() throws {
        var rng = SplitMix64(seed: 77)
        for seed in UInt64(1)...3 {
            let data = Self.dataset(seed: seed, count: 3000)
            let index = try ClusterIndex(dataset: data)
            for _ in 0..<60 {
                let zoom = Double(rng.next() % 19) + rng.nextUnit()
                let west = rng.nextUnit() * 360 - 180
                let width = rng.nextUnit() * (rng.nextUnit() < 0.5 ? 40 : 300)
                let south = rng.nextUnit() * 170 - 85
                let box = BBox.normalized(
                    west: west, south: south, east: west + width, north: min(85, south + rng.nextUnit() * 60))
                var got: [Feature] = []
                index.features(in: box, zoom: zoom, into: &got)
                let expected = Self.world(index, zoom).filter {
                    let at = $0.anchor ?? Coordinate(lat: $0.lat, lon: $0.lon)
                    return box.contains(lat: at.lat, lon: at.lon)
                }
                #expect(Set(got.map(\.id)) == Set(expected.map(\.id)), "box \(box) zoom \(zoom)")
                #expect(got.count == expected.count)
            }
        }
    }

    @Test("a split build on two threads or one, and a build from shuffled rows, give identical features and ids")
    func deterministic() throws {
        let data = Self.dataset(seed: 5, count: 3000)
        var rng = SplitMix64(seed: 1)
        var order = Array(0..<data.count)
        order.shuffle(using: &rng)
        let shuffled = Dataset(
            ids: order.map { data.ids[$0] }, coordinates: order.flatMap { [data.lon($0), data.lat($0)] })
        func key(_ f: Feature) -> String { "\(f.id) \(f.lat) \(f.lon) \(f.count) \(String(describing: f.parent))" }
        for parallelFrom in [Parallel.minimumItems, 50] {
            let build = { (d: Dataset, concurrently: Bool) in
                try ClusterIndex(
                    dataset: d, options: ClusterOptions(), aggregates: [], parallelFrom: parallelFrom,
                    concurrently: concurrently)
            }
            let a = try build(data, true)
            let b = try build(data, false)
            let c = try build(shuffled, true)
            for zoom in 0...17 {
                let fa = Self.world(a, Double(zoom))
                #expect(fa == Self.world(b, Double(zoom)))
                #expect(Set(fa.map(key)) == Set(Self.world(c, Double(zoom)).map(key)), "zoom \(zoom)")
            }
        }
    }

    @Test("removing one point keeps almost every cluster id")
    func stableIDs() throws {
        let data = Self.dataset(seed: 6, count: 4000)
        let fewer = Dataset(ids: Array(data.ids.dropLast()), coordinates: Array(data.coordinates.dropLast(2)))
        let a = try ClusterIndex(dataset: data)
        let b = try ClusterIndex(dataset: fewer)
        for zoom in 0...16 {
            let ia = Set(Self.world(a, Double(zoom)).filter { $0.row < 0 }.map(\.id))
            let ib = Set(Self.world(b, Double(zoom)).filter { $0.row < 0 }.map(\.id))
            #expect(ia.intersection(ib).count >= ia.count * 9 / 10, "zoom \(zoom)")
        }
        let clusterIDs = Self.world(a, 3).filter { $0.row < 0 }.map(\.id)
        #expect(clusterIDs.allSatisfy { $0 >> 32 >= 1 && $0 < 1 << 53 })
    }

    @Test("a viewport across the antimeridian finds points on both sides")
    func antimeridian() throws {
        let data = Dataset(ids: [1, 2, 3], coordinates: [179.95, 10, -179.95, 10.1, 0, 10])
        let index = try ClusterIndex(dataset: data)
        var out: [Feature] = []
        index.features(in: BBox(west: 179, south: 0, east: -179, north: 20), zoom: 12, into: &out)
        #expect(Set(out.map(\.id)) == [1, 2])
        index.features(in: BBox(west: -179, south: 0, east: 179, north: 20), zoom: 12, into: &out)
        #expect(out.map(\.id) == [3])
        index.features(in: BBox(west: -180, south: 0, east: 180, north: 20), zoom: 12, into: &out)
        #expect(out.count == 3)
    }

    @Test("points at and beyond the mercator limit near the poles are kept and found")
    func poles() throws {
        let data = Dataset(ids: [1, 2, 3, 4], coordinates: [10, 90, 10, 89.9, -50, -90, 0, Mercator.maxLatitude])
        let index = try ClusterIndex(dataset: data)
        for zoom in 0...18 {
            #expect(Self.world(index, Double(zoom)).reduce(0) { $0 + Int($1.count) } == 4)
        }
        var out: [Feature] = []
        index.features(in: BBox(west: -180, south: -90, east: 180, north: -80), zoom: 17, into: &out)
        #expect(out.map(\.id) == [3])
        index.features(in: BBox(west: 0, south: 80, east: 20, north: 90), zoom: 17, into: &out)
        #expect(Set(out.map(\.id)) == [1, 2, 4])
    }

    @Test("a fractional zoom reads the zoom below; zooms beyond the range clamp")
    func fractionalZoom() throws {
        let index = try ClusterIndex(dataset: Self.dataset(seed: 3, count: 2000))
        #expect(Self.world(index, 5.99) == Self.world(index, 5))
        #expect(Self.world(index, -3) == Self.world(index, 0))
        #expect(Self.world(index, 5) != Self.world(index, 6))
        // Beyond maxZoom + 1 the same features come back; only spread pins move apart with the zoom.
        let deep = Self.world(index, 23.5)
        let raw = Self.world(index, 17)
        #expect(deep.map(\.id) == raw.map(\.id) && deep.map(\.parent) == raw.map(\.parent))
        #expect(zip(deep, raw).allSatisfy { $0.anchor != nil || ($0.lat == $1.lat && $0.lon == $1.lon) })
        #expect(zip(deep, raw).contains { $0.anchor != nil && $0.lat != $1.lat })
    }

    @Test("an empty dataset answers every query with nothing")
    func empty() throws {
        let index = try ClusterIndex(dataset: Dataset(ids: [], coordinates: []))
        #expect(Self.world(index, 3).isEmpty)
        #expect(index.children(of: 1) == nil && index.leaves(of: 1, limit: 10, offset: 0) == nil)
        #expect(index.children(of: 1 << 32 | 1) == nil && index.expansion(of: 1, zoom: 3) == nil)
        #expect(index.itemsPerZoom.values.allSatisfy { $0 == 0 } && index.itemsPerZoom.count == 18)
    }

    @Test("one point is that point at every zoom, its own parent below the coarsest")
    func onePoint() throws {
        let index = try ClusterIndex(dataset: Dataset(ids: [42], coordinates: [2.35, 48.85]))
        for zoom in 0...20 {
            let f = Self.world(index, Double(zoom))
            #expect(f.count == 1 && f[0].id == 42 && f[0].lat == 48.85 && f[0].lon == 2.35 && f[0].row == 0)
            #expect(f[0].parent == (zoom == 0 ? nil : 42))
        }
        #expect(index.expansion(of: 42, zoom: 4) == .zoom(4))
        #expect(index.leaves(of: 42, limit: 5, offset: 0)?.map(\.id) == [42])
        #expect(index.children(of: 42) == [])
        #expect(index.children(of: 43) == nil)
    }

    @Test("5,000 pins on one coordinate come back spread, never as an eternal cluster")
    func fiveThousandOnOnePoint() throws {
        let n = 5000
        var coordinates: [Double] = []
        for _ in 0..<n { coordinates += [13.4, 52.52] }
        coordinates += [-70, -30, 100, 20]  // far away, alone
        let ids = (0..<(n + 2)).map { UInt32(($0 * 7919) % (n + 2)) }
        let data = Dataset(ids: ids, coordinates: coordinates)
        let index = try ClusterIndex(dataset: data)
        for zoom in [0.0, 4, 9, 16, 17, 20] {
            let features = Self.world(index, zoom)
            let spread = features.filter { $0.anchor != nil }
            #expect(spread.count == n, "zoom \(zoom)")
            #expect(features.count == n + 2)
            #expect(spread.allSatisfy { $0.count == 1 && $0.anchor == Coordinate(lat: 52.52, lon: 13.4) })
            #expect(spread.allSatisfy { data.ids[Int($0.row)] == UInt32($0.id) })
            #expect(spread.allSatisfy { $0.parent == (zoom == 0 ? nil : $0.id) })
        }
        // At its zoom the spread does not overlap.
        let at12 = Self.world(index, 12).filter { $0.anchor != nil }
        var positions: [Coordinate] = []
        index.placement.place(around: Coordinate(lat: 52.52, lon: 13.4), count: n, zoom: 12, into: &positions)
        let sortedIDs = at12.map(\.id)
        #expect(sortedIDs == sortedIDs.sorted())
        #expect(at12.map { Coordinate(lat: $0.lat, lon: $0.lon) } == positions)
        #expect(SpreadPlacementTests.minimumPixelDistance(positions, zoom: 12) >= index.placement.spacing * 0.999999)
    }

    @Test("a group next to a point is a cluster until the zoom where only the group remains, then spreads")
    func groupSplitsFromNeighbour() throws {
        var coordinates: [Double] = []
        for _ in 0..<30 { coordinates += [2.0, 45.0] }
        coordinates += [2.01, 45.0]  // about 790 m east
        let data = Dataset(ids: (0..<31).map { UInt32($0) }, coordinates: coordinates)
        let index = try ClusterIndex(dataset: data)
        let clusterZooms = (0...18).filter { Self.world(index, Double($0)).count == 1 }
        let splitZoom = try #require((0...18).first { !clusterZooms.contains($0) })
        #expect(clusterZooms == Array(0..<splitZoom))
        let cluster = Self.world(index, Double(splitZoom - 1))[0]
        #expect(cluster.count == 31 && cluster.row < 0)
        #expect(index.expansion(of: cluster.id, zoom: 3) == .zoom(Double(splitZoom)))
        let split = Self.world(index, Double(splitZoom))
        #expect(split.count == 31 && split.allSatisfy { $0.parent == cluster.id })
        guard case .spread(let members) = index.expansion(of: 7, zoom: Double(splitZoom)) else {
            Issue.record("a group member expands to its spread")
            return
        }
        #expect(members.map(\.id) == (0..<30).map { FeatureID($0) })
        #expect(members == split.filter { $0.anchor != nil })
        guard case .spread(let inside) = index.expansion(of: 7, zoom: 2) else {
            Issue.record("a group member expands to its spread inside a cluster too")
            return
        }
        #expect(inside.count == 30 && inside.allSatisfy { $0.parent == cluster.id })
    }

    @Test("seed mode spreads members exactly as the published design")
    func seedMode() throws {
        var coordinates: [Double] = []
        for _ in 0..<12 { coordinates += [-0.1276, 51.5072] }
        let data = Dataset(ids: (0..<12).map { UInt32(100 - $0) }, coordinates: coordinates)
        let index = try ClusterIndex(dataset: data, options: ClusterOptions(spread: .seed))
        let features = Self.world(index, 15)
        #expect(features.map(\.id) == (89...100).map { FeatureID($0) })
        for (i, f) in features.enumerated() {
            let expected = SpreadPlacement.seedPosition(
                member: i, count: 12, around: Coordinate(lat: 51.5072, lon: -0.1276))
            #expect(f.lat == expected.lat && f.lon == expected.lon)
        }
    }

    @Test("at every zoom each cluster's sum, min, max and mean equal those over the leaves it holds")
    func aggregates() throws {
        for seed: UInt64 in [4, 5] {
            let data = AggregateOracle.dataset(Self.dataset(seed: seed, count: 1500), seed: seed)
            let index = try ClusterIndex(dataset: data, aggregates: AggregateOracle.aggregates)
            #expect(index.aggregates == AggregateOracle.aggregates)
            for zoom in 0...17 {
                for f in Self.world(index, Double(zoom)) {
                    let leaves = f.isPoint ? [] : index.leaves(of: f.id, limit: Int.max, offset: 0)!
                    let rows = f.isPoint ? [Int(f.row)] : leaves.map { Int($0.row) }
                    #expect(AggregateOracle.matches(index.aggregateValues(of: f), count: f.count, rows: rows, data))
                }
            }
        }
        let data = AggregateOracle.dataset(Self.dataset(seed: 4, count: 10), seed: 4)
        #expect(throws: IndexError.unknownAggregateColumn(name: "area", available: ["name", "pop"])) {
            try ClusterIndex(dataset: data, aggregates: [Aggregate(name: "a", operation: .sum, column: "area")])
        }
    }

    @Test("leaves come in one stable order that limit and offset page through")
    func leavesPaging() throws {
        let index = try ClusterIndex(dataset: Self.dataset(seed: 8, count: 3000))
        let big = try #require(Self.world(index, 1).max { $0.count < $1.count })
        #expect(big.count > 50)
        let all = try #require(index.leaves(of: big.id, limit: Int.max, offset: 0))
        #expect(all.count == Int(big.count))
        var paged: [Feature] = []
        var offset = 0
        while offset < all.count {
            paged += try #require(index.leaves(of: big.id, limit: 17, offset: offset))
            offset += 17
        }
        #expect(paged == all)
        #expect(index.leaves(of: big.id, limit: 5, offset: all.count)?.isEmpty == true)
    }

    @Test("expanding a cluster names the zoom where it splits")
    func expansionZoom() throws {
        let index = try ClusterIndex(dataset: Self.dataset(seed: 2, count: 2000))
        for zoom in [0, 3, 7, 12] {
            for c in Self.world(index, Double(zoom)).filter({ $0.row < 0 }).prefix(20) {
                guard case .zoom(let split) = index.expansion(of: c.id, zoom: Double(zoom)) else {
                    Issue.record("a cluster expands to a zoom")
                    continue
                }
                #expect(split > Double(zoom))
                let below = Self.world(index, split - 1).map(\.id)
                let at = Self.world(index, split)
                #expect(below.contains(c.id) && !at.map(\.id).contains(c.id))
                #expect(at.filter { $0.parent == c.id }.count >= 2)
            }
        }
        #expect(index.expansion(of: 17 << 32 | 5, zoom: 3) == nil)
    }

    @Test("bad options are rejected, naming the option")
    func badOptions() {
        let data = Dataset(ids: [1], coordinates: [0, 0])
        #expect(
            throws: IndexError.invalidOption(name: "radius", value: "-1.0", expected: "a positive number of pixels")
        ) {
            try ClusterIndex(dataset: data, options: ClusterOptions(radius: -1))
        }
        #expect(throws: IndexError.self) { try ClusterIndex(dataset: data, options: ClusterOptions(maxZoom: 25)) }
        #expect(throws: IndexError.self) { try ClusterIndex(dataset: data, options: ClusterOptions(minPoints: 1)) }
    }

    @Test("minPoints above 2 leaves small groups of points unclustered, as supercluster does")
    func minPoints() throws {
        let data = Dataset(ids: [1, 2, 3, 4, 5], coordinates: [0, 0, 0.001, 0, 0.002, 0, 50, 50, 50.001, 50])
        let index = try ClusterIndex(dataset: data, options: ClusterOptions(minPoints: 3))
        let features = Self.world(index, 10)
        #expect(features.filter { $0.row < 0 }.map(\.count) == [3])
        #expect(Set(features.filter { $0.isPoint }.map(\.id)) == [4, 5])
    }

    @Test("other zoom ranges and radii keep every point in exactly one feature, parents one zoom up")
    func otherOptions() throws {
        let data = Self.dataset(seed: 12, count: 2000)
        for options in [
            ClusterOptions(minZoom: 3, maxZoom: 10), ClusterOptions(maxZoom: 20, radius: 80, extent: 256),
            ClusterOptions(minZoom: 0, maxZoom: 0), ClusterOptions(radius: 512, extent: 512),
        ] {
            let index = try ClusterIndex(dataset: data, options: options)
            for zoom in 0...(options.maxZoom + 2) {
                let features = Self.world(index, Double(zoom))
                #expect(features.reduce(0) { $0 + Int($1.count) } == data.count, "\(options) zoom \(zoom)")
                let coarser = Set(Self.world(index, Double(zoom - 1)).map(\.id))
                let atCoarsest = zoom <= options.minZoom
                #expect(features.allSatisfy { atCoarsest ? $0.parent == nil : coarser.contains($0.parent!) })
            }
        }
    }

    @Test("greedy clustering leaves no two unclustered items within the radius of each other, at any zoom")
    func greedyFindsEveryNeighbour() throws {
        for seed in UInt64(1)...3 {
            let data = Self.dataset(seed: seed, count: 3000)
            for index in try Self.builds(data) {
                for li in 0..<(index.levels.count - 1) {
                    let level = index.levels[li]
                    let r = index.options.radius(atZoom: level.zoom)
                    // Items copied unchanged from the zoom below have exactly one child.
                    var copies: [(x: Double, y: Double)] = []
                    for i in 0..<level.count where level.firstChild[i + 1] - level.firstChild[i] == 1 {
                        copies.append((level.xy[2 * i], level.xy[2 * i + 1]))
                    }
                    copies.sort { $0.x < $1.x }
                    var closest: Double = .infinity
                    for a in copies.indices {
                        var b = a + 1
                        while b < copies.count && copies[b].x - copies[a].x <= r {
                            let dx: Double = copies[b].x - copies[a].x
                            let dy: Double = copies[b].y - copies[a].y
                            closest = min(closest, (dx * dx + dy * dy).squareRoot())
                            b += 1
                        }
                    }
                    #expect(closest > r, "zoom \(level.zoom): two unclustered items \(closest) apart, radius \(r)")
                }
            }
        }
    }

    @Test(
        "a point's row is found by its id, whether ids are the rows, increase with them or come in any order",
        arguments: [[0, 1, 2, 3, 4], [3, 7, 10, 42, 99], [42, 3, 99, 10, 7]] as [[UInt32]])
    func rowOfID(ids: [UInt32]) throws {
        let coordinates = ids.indices.flatMap { [Double($0), Double($0) / 2] }
        let index = try ClusterIndex(dataset: Dataset(ids: ids, coordinates: coordinates))
        for (row, id) in ids.enumerated() { #expect(index.row(ofID: FeatureID(id)) == row) }
        for missing in [5, 43, 100, 1 << 40] as [FeatureID] where !ids.contains(where: { FeatureID($0) == missing }) {
            #expect(index.row(ofID: missing) == nil)
        }
    }
}
