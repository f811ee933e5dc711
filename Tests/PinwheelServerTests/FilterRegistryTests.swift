import Foundation
import PinwheelCore
import Synchronization
import Testing

@testable import PinwheelServer

@Suite("Filter registry")
struct FilterRegistryTests {
    /// Synthetic points with `even` (of the id) and `tens` (id % 100 / 10).
    static func points(_ count: Int) -> Dataset {
        var d = SyntheticGenerator(seed: 3).dataset(count: count)
        d.properties = PropertyTable(
            columns: ["even", "tens"],
            values: d.ids.flatMap { id -> [PropertyValue?] in [.bool(id % 2 == 0), .number(Double(id % 100 / 10))] })
        return d
    }

    static func filter(_ text: String) throws -> EffectiveFilter {
        EffectiveFilter(requested: try FilterExpression(json: JSONReader.parse(Array(text.utf8))))
    }

    /// The points a registry reads, as a live server's table is: changed under a lock.
    final class Points: Sendable {
        let data: Mutex<Dataset>
        init(_ d: Dataset) { data = Mutex(d) }
    }

    static func source(_ points: Points, live: Bool) -> FilterRegistry.Source {
        // The full index as it is at start: its bytes per point are all the estimates read.
        let full = try! ClusterIndex(dataset: points.data.withLock { $0 })
        return FilterRegistry.Source(
            points: { filter in points.data.withLock { $0.filtered(by: filter) } }, full: { _ in full }, live: live,
            options: ClusterOptions(),
            aggregates: [])
    }

    @Test("filters written differently share one index")
    func sharing() throws {
        let data = Points(Self.points(5_000))
        let registry = FilterRegistry(source: Self.source(data, live: false), budget: 1 << 30)
        let a = try Self.filter(#"["==", ["get", "even"], true]"#)
        let sameAsA = try Self.filter(#"["get", "even"]"#)
        registry.acquire(a)
        let first = try registry.clusterer(for: .hierarchical, filter: a)
        let second = try registry.clusterer(for: .hierarchical, filter: sameAsA)
        #expect(first.pointCount == 2_500 && (first as AnyObject) === (second as AnyObject))
        #expect(registry.held.count == 1)
    }

    @Test(
        "a filter whose index would take those in use past the budget is refused and changes nothing; once the other is unused, it is admitted in its place"
    )
    func budgetBoundsIndexesInUse() throws {
        let data = Points(Self.points(5_000))
        let a = try Self.filter(#"["==", ["get", "even"], true]"#)
        let b = try Self.filter(#"[">=", ["get", "tens"], 5]"#)
        // What a's index holds once built, measured on a registry with room for anything.
        let roomy = FilterRegistry(source: Self.source(data, live: false), budget: 1 << 30)
        _ = try roomy.clusterer(for: .hierarchical, filter: a)
        let aBytes = roomy.held.bytes
        let full = try ClusterIndex(dataset: data.data.withLock { $0 })
        let bEstimate = FilterAdmission.estimate(
            algorithm: .hierarchical, points: 2_500, fullBytes: full.estimatedBytes, fullPoints: 5_000)
        // Room for either index, not for both.
        let budget = aBytes + bEstimate - 1
        let registry = FilterRegistry(source: Self.source(data, live: false), budget: budget)
        registry.acquire(a)
        _ = try registry.clusterer(for: .hierarchical, filter: a)
        #expect(registry.held.bytes == aBytes)
        #expect(throws: FilterRefusal(points: 2_500, estimate: bEstimate, inUse: aBytes, budget: budget)) {
            try registry.clusterer(for: .hierarchical, filter: b)
        }
        #expect(registry.refused == 1)
        #expect(registry.held.count == 1 && registry.held.bytes == aBytes, "nothing built, nothing let go of")
        // Unused, a stays while it fits, and goes when b needs its room.
        registry.release(a)
        #expect(registry.held.count == 1 && registry.inUse == 0)
        registry.acquire(b)
        let bIndex = try registry.clusterer(for: .hierarchical, filter: b)
        #expect(bIndex.pointCount == 2_500)
        #expect(registry.held.count == 1 && registry.held.bytes == bIndex.estimatedBytes && registry.inUse == 1)
        #expect(registry.refused == 1)
        // b in use: a, asked for again, is refused in its turn.
        #expect(throws: FilterRefusal.self) { try registry.clusterer(for: .hierarchical, filter: a) }
        #expect(registry.refused == 2)
    }

    @Test(
        "an index just asked for is not let go of for another's room until its session takes hold of it; once let go of, it may be"
    )
    func graceBeforeHold() throws {
        let data = Points(Self.points(5_000))
        let b = try Self.filter(#"[">=", ["get", "tens"], 5]"#)
        let c = try Self.filter(#"["==", ["get", "even"], true]"#)
        let roomy = FilterRegistry(source: Self.source(data, live: false), budget: 1 << 30)
        _ = try roomy.clusterer(for: .hierarchical, filter: b)
        let bBytes = roomy.held.bytes
        let full = try ClusterIndex(dataset: data.data.withLock { $0 })
        let cEstimate = FilterAdmission.estimate(
            algorithm: .hierarchical, points: 2_500, fullBytes: full.estimatedBytes, fullPoints: 5_000)
        // Room for c alone, not beside b.
        let registry = FilterRegistry(
            source: Self.source(data, live: false), budget: bBytes + cEstimate - 1, grace: .seconds(600))
        // b's session asked within its turn and takes hold at the turn's end: c cannot take its room.
        let asked = try registry.clusterer(for: .hierarchical, filter: b)
        #expect(throws: FilterRefusal.self) { try registry.clusterer(for: .hierarchical, filter: c) }
        registry.acquire(b)
        let again = try registry.clusterer(for: .hierarchical, filter: b)
        let sameIndex = (asked as AnyObject) === (again as AnyObject)
        #expect(sameIndex, "the index asked for, not a second build")
        // Its session gone, b may go within its grace to make room.
        registry.release(b)
        #expect(registry.held.count == 1, "kept while it fits")
        let built = try registry.clusterer(for: .hierarchical, filter: c)
        #expect(built.pointCount == 2_500 && registry.held.count == 1 && registry.refused == 1)
    }

    @Test(
        "a live filtered index lets in points that start passing and out those that stop, then compacts to a fresh build",
        arguments: [false, true])
    func liveChanges(knowsPrior: Bool) throws {
        let data = Points(Self.points(2_000))
        let registry = FilterRegistry(source: Self.source(data, live: true), budget: 1 << 30)
        let even = try Self.filter(#"["get", "even"]"#)
        registry.acquire(even)
        let before = try registry.clusterer(for: .hierarchical, filter: even)
        #expect(before.pointCount == 1_000)
        var table = PointTable(data.data.withLock { $0 })
        var changes: [ChangedPoint] = []
        // Odd ids become even-flagged (in), even ids become odd-flagged (out): 1,500 changes in all.
        // Then the points left out move and stay out: changes that concern the filtered index not at
        // all, passed over when the values before are known.
        let moves = (UInt32(1_500)..<2_000).filter { $0 % 2 == 1 }
        for (k, id) in (Array(0..<1_500) + moves).enumerated() {
            let position = table.coordinate(of: .number(id))!
            let prior = table.record(ofID: id).map { ChangedPoint.Prior.values($0.values) } ?? .absent
            table.apply(
                .upsert(
                    .number(id), lat: position.lat + (id < 1_500 ? 0 : 0.5), lon: position.lon,
                    properties: ["even": .bool(id % 2 == 1 && id < 1_500), "tens": 0]),
                version: UInt64(k) + 1)
            changes.append(ChangedPoint(id: id, now: table.record(ofID: id), prior: knowsPrior ? prior : .unknown))
        }
        data.data.withLock { $0 = table.dataset }
        registry.refresh(
            changes: changes, version: table.dataset.version, names: [:], columns: table.dataset.properties.columns)
        let expected = table.dataset.filtered(by: even.expression!)
        let after = try registry.clusterer(for: .hierarchical, filter: even)
        #expect(after.pointCount == expected.count)
        var shown: [Feature] = []
        after.features(in: BBox(west: -180, south: -85, east: 180, north: 85), zoom: 20, into: &shown)
        #expect(Set(shown.map { UInt32($0.id) }) == Set(expected.ids))
        // 1,500 changes over 1,000 points: compacted in the background into a build of the points now.
        let fresh = try ClusterIndex(dataset: expected)
        var compacted = false
        for _ in 0..<200 where !compacted {
            let now = try registry.clusterer(for: .hierarchical, filter: even)
            var a: [Feature] = []
            var b: [Feature] = []
            now.features(in: BBox(west: -180, south: -85, east: 180, north: 85), zoom: 3, into: &a)
            fresh.features(in: BBox(west: -180, south: -85, east: 180, north: 85), zoom: 3, into: &b)
            let key = { (f: Feature) in "\(f.id) \(f.count) \(f.lat) \(f.lon) \(f.parent ?? 0)" }
            compacted = Set(a.map(key)) == Set(b.map(key))
            if !compacted { Thread.sleep(forTimeInterval: 0.02) }
        }
        #expect(compacted)
    }
}
