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
    static func overlaid(seed: UInt64, base: Int = 3000, changes: Int) throws -> (
        live: LiveClusterIndex, fresh: ClusterIndex, table: PointTable
    ) {
        let (table, _, changed) = History.randomHistory(seed: seed, base: base, changes: changes)
        let start = SyntheticGenerator(seed: seed).dataset(count: base)
        var delta = ClusterDelta(base: try ClusterIndex(dataset: start))
        for change in changed { delta.apply(change) }
        let live = LiveClusterIndex(
            delta: delta, version: table.dataset.version, names: table.dataset.names, pointCount: table.count,
            rows: { table.rows(of: $0) })
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

    @Test("at every zoom its features hold every point exactly once, as a fresh build's do", arguments: [UInt64(4), 5])
    func countsAddUp(seed: UInt64) throws {
        let (live, fresh, table) = try Self.overlaid(seed: seed, changes: 2000)
        for zoom in 0...18 {
            let total = Self.query(live, Self.world, Double(zoom)).reduce(0) { $0 + Int($1.count) }
            let expected = Self.query(fresh, Self.world, Double(zoom)).reduce(0) { $0 + Int($1.count) }
            #expect(total == expected && total == table.count, "zoom \(zoom): \(total) of \(table.count)")
        }
    }

    @Test("it makes no cluster id its base did not have, and leaves changed points out of its base's features")
    func idsComeFromTheBase() throws {
        let (live, _, table) = try Self.overlaid(seed: 6, changes: 1500)
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
        delta.apply(ChangedPoint(id: id, position: away))
        var table = PointTable(start)
        table.apply(.upsert(.number(id), lat: away.lat, lon: away.lon, properties: [:]), version: 1)
        let live = LiveClusterIndex(
            delta: delta, version: 1, names: [:], pointCount: table.count, rows: { table.rows(of: $0) })
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
        delta.apply(ChangedPoint(id: 2, position: nil))
        delta.apply(ChangedPoint(id: 3, position: nil))
        let live = LiveClusterIndex(
            delta: delta, version: 2, names: [:], pointCount: 2, rows: { _ in (PropertyTable(), []) })
        let features = Self.query(live, Self.world, 5)
        #expect(!features.contains { $0.id == cluster.id })
        let left = features.first { $0.id == 1 }
        #expect(left?.count == 1 && left?.lat == 50.0 && left?.lon == 10.0 && left?.parent == cluster.parent)
    }
}
