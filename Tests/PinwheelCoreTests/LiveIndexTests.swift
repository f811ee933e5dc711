import Testing

@testable import PinwheelCore

/// The index follows the data: a table edited by any sequence of changes clusters exactly like a fresh
/// dataset of the points it ends with, and unchanged clusters keep their ids across a change.
@Suite("Live index")
struct LiveIndexTests {
    /// Random changes over a synthetic base: 90 % moves, 5 % inserts (some named, some onto another
    /// point's exact coordinate), 5 % deletes; the model is what the points should be afterwards, and
    /// `changed` each change as the point it left where.
    static func randomHistory(seed: UInt64, base: Int, changes: Int) -> (
        table: PointTable, model: [UInt32: (Double, Double)], changed: [ChangedPoint]
    ) {
        var random = SeededRandom(seed: seed)
        let start = SyntheticGenerator(seed: seed).dataset(count: base)
        var table = PointTable(start)
        var model: [UInt32: (Double, Double)] = [:]
        for row in 0..<start.count { model[start.ids[row]] = (start.lat(row), start.lon(row)) }
        var names = 0
        var changed: [ChangedPoint] = []
        for version in 1...UInt64(changes) {
            let live = table.dataset.ids
            let roll = Int.random(in: 0..<100, using: &random)
            let change: Change
            if roll < 5 || live.isEmpty {
                let onTop = Bool.random(using: &random) && !live.isEmpty
                let (lat, lon) =
                    onTop
                    ? model[live.randomElement(using: &random)!]!
                    : (Double.random(in: -60...70, using: &random), Double.random(in: -170...170, using: &random))
                names += 1
                let key: PointKey =
                    Bool.random(using: &random)
                    ? .name("producer-\(names)") : .number(UInt32(base + 1000 + names))
                change = .upsert(key, lat: lat, lon: lon, properties: [:])
            } else if roll < 10 {
                change = .delete(key(of: live.randomElement(using: &random)!, in: table))
            } else {
                let id = live.randomElement(using: &random)!
                let (lat, lon) = model[id]!
                change = .upsert(
                    key(of: id, in: table), lat: min(85, max(-85, lat + Double.random(in: -0.5...0.5, using: &random))),
                    lon: min(180, max(-180, lon + Double.random(in: -0.5...0.5, using: &random))), properties: [:])
            }
            let deleted = table.id(of: change.key)
            table.apply(change, version: version)
            switch change {
            case .upsert(let key, let lat, let lon, _, _):
                model[table.id(of: key)!] = (lat, lon)
                changed.append(ChangedPoint(id: table.id(of: key)!, now: table.record(ofID: table.id(of: key)!)))
            case .delete:
                model[deleted!] = nil
                changed.append(ChangedPoint(id: deleted!, now: nil))
            }
        }
        return (table, model, changed)
    }

    static func key(of id: UInt32, in table: PointTable) -> PointKey {
        table.name(ofID: id).map { .name($0) } ?? .number(id)
    }

    /// A feature's identity and what a page draws of it, leaving out the row (which depends on history).
    struct Drawn: Hashable {
        var id: FeatureID
        var lat: Double
        var lon: Double
        var count: UInt32
        var parent: FeatureID?
        var anchorLat: Double?
        var anchorLon: Double?

        init(_ f: Feature) {
            id = f.id
            lat = f.lat
            lon = f.lon
            count = f.count
            parent = f.parent
            anchorLat = f.anchor?.lat
            anchorLon = f.anchor?.lon
        }
    }

    static let views: [(BBox, Double)] = [
        (BBox(west: -180, south: -85, east: 180, north: 85), 1),
        (BBox(west: -30, south: 20, east: 40, north: 65), 4),
        (BBox(west: -5, south: 40, east: 15, north: 55), 7),
        (BBox(west: 0, south: 45, east: 5, north: 50), 10),
        (BBox(west: 2, south: 48, east: 3, north: 49), 17.5),
    ]

    static func drawn(_ clusterer: any Clusterer) -> [Set<Drawn>] {
        views.map { box, zoom in
            var out: [Feature] = []
            clusterer.features(in: box, zoom: zoom, into: &out)
            return Set(out.map(Drawn.init))
        }
    }

    @Test(
        "after any sequence of changes the index equals a fresh build of the points it ends with",
        arguments: [Algorithm.hierarchical, .pcaTree], [UInt64(1), 2, 3])
    func equalsAFreshBuild(algorithm: Algorithm, seed: UInt64) throws {
        let (table, model, _) = Self.randomHistory(seed: seed, base: 3000, changes: 1500)
        #expect(Set(table.dataset.ids) == Set(model.keys))
        // The fresh dataset lists the same points in ascending id order, built from the model alone.
        let ids = model.keys.sorted()
        let fresh = Dataset(ids: ids, coordinates: ids.flatMap { [model[$0]!.1, model[$0]!.0] })
        let live = try ClustererFactory.make(algorithm, dataset: table.dataset)
        let rebuilt = try ClustererFactory.make(algorithm, dataset: fresh)
        for (view, (a, b)) in zip(Self.views, zip(Self.drawn(live), Self.drawn(rebuilt))) {
            let left = a.sorted { $0.id < $1.id }
            let right = b.sorted { $0.id < $1.id }
            #expect(left.map(\.id) == right.map(\.id), "ids at zoom \(view.1)")
            for (f, g) in zip(left, right) where f != g {
                // Centroids are sums of coordinates: a different summation order may change the last bit.
                #expect(f.count == g.count && f.parent == g.parent, "\(f) vs \(g)")
                #expect(abs(f.lat - g.lat) < 1e-9 && abs(f.lon - g.lon) < 1e-9, "\(f) vs \(g)")
            }
        }
    }

    @Test("one moved point leaves almost every cluster's id as it was", arguments: [Algorithm.hierarchical, .pcaTree])
    func unchangedClustersKeepIDs(algorithm: Algorithm) throws {
        var table = PointTable(SyntheticGenerator(seed: 5).dataset(count: 20_000))
        let before = Self.drawn(try ClustererFactory.make(algorithm, dataset: table.dataset))
        let id = table.dataset.ids[1234]
        table.apply(
            .upsert(.number(id), lat: table.dataset.lat(1234) + 0.01, lon: table.dataset.lon(1234), properties: [:]),
            version: 1)
        let after = Self.drawn(try ClustererFactory.make(algorithm, dataset: table.dataset))
        for (old, new) in zip(before, after) where !old.isEmpty {
            let kept = Set(old.map(\.id)).intersection(new.map(\.id)).count
            #expect(Double(kept) >= 0.9 * Double(old.count), "kept \(kept) of \(old.count) ids")
        }
    }
}
