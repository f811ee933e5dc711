import Testing

@testable import PinwheelCore

/// A live index (a base build with the changes since laid over it) against a fresh build of the same
/// points: exact where points stand alone, the same totals everywhere, and no cluster id the base
/// did not have.
@Suite("Live cluster index")
struct LiveClusterIndexTests {
    typealias History = LiveIndexTests

    /// A base over `base` synthetic points, the changes of a random history laid over it, and a fresh
    /// build of the points the history ends with.
    /// - Parameter largestDenseLevel: the most items a level may have to keep its adjustments in an
    ///   array; 0 sends every level the fine levels' way.
    static func overlaid(
        seed: UInt64, base: Int = 3000, changes: Int, largestDenseLevel: Int = ClusterDelta.largestDenseLevel
    ) throws -> (live: LiveClusterIndex, fresh: ClusterIndex, table: PointTable) {
        let (table, _, changed) = History.randomHistory(seed: seed, base: base, changes: changes)
        let start = SyntheticGenerator(seed: seed).dataset(count: base)
        var delta = ClusterDelta(base: try ClusterIndex(dataset: start), largestDenseLevel: largestDenseLevel)
        for change in changed { delta.apply(change) }
        let live = LiveClusterIndex(
            delta: delta, version: table.dataset.version, names: table.dataset.names,
            columns: table.dataset.properties.columns, pointCount: table.count)
        return (live, try ClusterIndex(dataset: table.dataset), table)
    }

    static let world = BBox(west: -180, south: -85, east: 180, north: 85)

    static func query(_ clusterer: any Clusterer, _ box: BBox, _ zoom: Double) -> [Feature] {
        var out: [Feature] = []
        clusterer.features(in: box, zoom: zoom, into: &out)
        return out
    }

    @Test("with nothing changed it draws exactly what its base draws")
    func unchanged() throws {
        let base = try ClusterIndex(dataset: SyntheticGenerator(seed: 9).dataset(count: 5000))
        let live = LiveClusterIndex(base: base)
        for (box, zoom) in History.views {
            #expect(Self.query(live, box, zoom) == Self.query(base, box, zoom))
        }
    }

    @Test("at the raw zoom it draws the points a fresh build draws, where they are", arguments: [UInt64(1), 2, 3])
    func rawZoomIsExact(seed: UInt64) throws {
        let (live, fresh, _) = try Self.overlaid(seed: seed, changes: 1500)
        for zoom in [17.0, 19.5] {
            let a = Self.query(live, Self.world, zoom)
            let b = Self.query(fresh, Self.world, zoom)
            #expect(Set(a.map(\.id)) == Set(b.map(\.id)), "ids at zoom \(zoom)")
            let truePlace = Dictionary(
                uniqueKeysWithValues: b.map { ($0.id, $0.anchor ?? Coordinate(lat: $0.lat, lon: $0.lon)) })
            for f in a {
                let place = f.anchor ?? Coordinate(lat: f.lat, lon: f.lon)
                #expect(place == truePlace[f.id], "point \(f.id)")
                #expect(f.count == 1)
            }
        }
    }

    @Test(
        "at every zoom its features hold every point exactly once, as a fresh build's do",
        arguments: [UInt64(4), 5], [ClusterDelta.largestDenseLevel, 0])
    func countsAddUp(seed: UInt64, largestDenseLevel: Int) throws {
        let (live, fresh, table) = try Self.overlaid(seed: seed, changes: 2000, largestDenseLevel: largestDenseLevel)
        for zoom in 0...18 {
            let total = Self.query(live, Self.world, Double(zoom)).reduce(0) { $0 + Int($1.count) }
            let expected = Self.query(fresh, Self.world, Double(zoom)).reduce(0) { $0 + Int($1.count) }
            #expect(total == expected && total == table.count, "zoom \(zoom): \(total) of \(table.count)")
        }
    }

    @Test(
        "it makes no cluster id its base did not have, and leaves changed points out of its base's features",
        arguments: [ClusterDelta.largestDenseLevel, 0])
    func idsComeFromTheBase(largestDenseLevel: Int) throws {
        let (live, _, table) = try Self.overlaid(seed: 6, changes: 1500, largestDenseLevel: largestDenseLevel)
        let present = Set(table.dataset.ids)
        for zoom in 0...18 {
            let base = Set(Self.query(live.base, Self.world, Double(zoom)).map(\.id))
            let features = Self.query(live, Self.world, Double(zoom))
            #expect(Set(features.map(\.id)).count == features.count, "one feature per id at zoom \(zoom)")
            for f in features {
                if f.id >> 32 != 0 { #expect(base.contains(f.id), "cluster \(f.id) at zoom \(zoom)") }
                if f.isPoint { #expect(present.contains(UInt32(f.id)), "point \(f.id) at zoom \(zoom)") }
            }
        }
    }

    @Test(
        "the fine levels, which read what removed points took from runs of positions, draw what arrays do",
        arguments: [UInt64(8), 9])
    func fineLevelsMatchArrays(seed: UInt64) throws {
        let arrays = try Self.overlaid(seed: seed, changes: 2500).live
        let runs = try Self.overlaid(seed: seed, changes: 2500, largestDenseLevel: 0).live
        #expect(runs.delta.firstMappedLevel == 0 && arrays.delta.firstMappedLevel == arrays.base.levels.count)
        for zoom in 0...18 {
            let a = Self.query(arrays, Self.world, Double(zoom)).sorted { $0.id < $1.id }
            let b = Self.query(runs, Self.world, Double(zoom)).sorted { $0.id < $1.id }
            #expect(a.map(\.id) == b.map(\.id) && a.map(\.count) == b.map(\.count), "zoom \(zoom)")
            for (f, g) in zip(a, b) {
                #expect(abs(f.lat - g.lat) < 1e-9 && abs(f.lon - g.lon) < 1e-9, "feature \(f.id) at zoom \(zoom)")
            }
        }
    }

    @Test("a moved point leaves its cluster's count and shows at its new place")
    func movedPoint() throws {
        let start = SyntheticGenerator(seed: 7).dataset(count: 20_000)
        let base = try ClusterIndex(dataset: start)
        let id = start.ids[42]
        let holder = Self.query(base, Self.world, 3).first { f in
            base.leaves(of: f.id, limit: Int(f.count), offset: 0)?.contains { $0.id == FeatureID(id) } ?? false
        }!
        var delta = ClusterDelta(base: base)
        // Far from every synthetic point: alone at every zoom.
        let away = Coordinate(lat: -80, lon: -170)
        var table = PointTable(start)
        table.apply(.upsert(.number(id), lat: away.lat, lon: away.lon, properties: [:]), version: 1)
        delta.apply(ChangedPoint(id: id, now: table.record(ofID: id)))
        let live = LiveClusterIndex(delta: delta, version: 1, names: [:], columns: [], pointCount: table.count)
        let after = Self.query(live, Self.world, 3)
        #expect(after.first { $0.id == holder.id }?.count == holder.count - 1)
        let moved = after.first { $0.id == FeatureID(id) }
        #expect(moved?.lat == away.lat && moved?.lon == away.lon && moved?.count == 1)
        #expect(live.dataset.version == 1 && live.pointCount == start.count)
        #expect(moved.map { $0.row >= live.changedRows!.start } == true)
    }

    @Test("a cluster left with one of its points draws that point")
    func lastPointOfACluster() throws {
        // Three points close together and one far away.
        let start = Dataset(
            ids: [1, 2, 3, 4], coordinates: [10.0, 50.0, 10.001, 50.0, 10.002, 50.0, -120.0, -40.0])
        let base = try ClusterIndex(dataset: start)
        let cluster = Self.query(base, Self.world, 5).first { $0.count == 3 }!
        var delta = ClusterDelta(base: base)
        delta.apply(ChangedPoint(id: 2, now: nil))
        delta.apply(ChangedPoint(id: 3, now: nil))
        let live = LiveClusterIndex(delta: delta, version: 2, names: [:], columns: [], pointCount: 2)
        let features = Self.query(live, Self.world, 5)
        #expect(!features.contains { $0.id == cluster.id })
        let left = features.first { $0.id == 1 }
        #expect(left?.count == 1 && left?.lat == 50.0 && left?.lon == 10.0 && left?.parent == cluster.parent)
    }

    @Test("a point added since the base is sent with its properties, key and revision")
    func addedPointOnTheWire() throws {
        let start = Dataset(
            ids: [1, 2], coordinates: [10.0, 50.0, -120.0, -40.0],
            properties: PropertyTable(columns: ["name"], values: ["Ghent", "Nowhere"]))
        var table = PointTable(start)
        let base = try ClusterIndex(dataset: start)
        table.apply(.upsert(.name("bus-7"), lat: 20, lon: 30, properties: ["name": "Bus 7", "line": "12"]), version: 1)
        let id = table.id(of: .name("bus-7"))!
        var delta = ClusterDelta(base: base)
        delta.apply(ChangedPoint(id: id, now: table.record(ofID: id)))
        let live = LiveClusterIndex(
            delta: delta, version: 1, names: table.dataset.names, columns: table.dataset.properties.columns,
            pointCount: table.count)
        let features = Self.query(live, Self.world, 18)
        let bus = try #require(features.first { $0.id == FeatureID(id) })
        #expect(bus.revision == 1)
        var encoder = MessageEncoder()
        encoder.batch(
            seq: 1, number: 1, remove: [], add: features.sorted { $0.id < $1.id }, update: [], done: true,
            context: FeatureContext(clusterer: live))
        guard case .batch(let batch) = try ServerMessage.decode(Array(encoder.message)) else {
            Issue.record("not a batch")
            return
        }
        #expect(batch.add.first { $0.id == 1 }?.properties == ["name": "Ghent"])
        let sent = batch.add.first { $0.id == FeatureID(id) }
        #expect(sent?.properties == ["name": "Bus 7", "line": "12"])
        #expect(sent?.key == "bus-7")
    }

    @Test("a change footprint reaches views near it, across the antimeridian too, and not views far away")
    func footprint() {
        var footprint = ChangeFootprint()
        footprint.add(x: Mercator.x(lon: 4.9), y: Mercator.y(lat: 52.37))
        footprint.add(x: Mercator.x(lon: 179.9), y: Mercator.y(lat: -17))
        let options = ClusterOptions()
        #expect(footprint.touches(BBox(west: 4, south: 52, east: 5, north: 53), zoom: 10, options: options))
        // Just outside the view, within two cluster radii at zoom 3 (about 1,200 km there).
        #expect(footprint.touches(BBox(west: 8, south: 52, east: 12, north: 54), zoom: 3, options: options))
        #expect(!footprint.touches(BBox(west: 8, south: 52, east: 12, north: 54), zoom: 12, options: options))
        #expect(footprint.touches(BBox(west: 170, south: -20, east: -170, north: -10), zoom: 6, options: options))
        #expect(!footprint.touches(BBox(west: -80, south: 30, east: -70, north: 40), zoom: 6, options: options))
        #expect(!ChangeFootprint().touches(Self.world, zoom: 0, options: options))
    }
}
