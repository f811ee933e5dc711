import Testing

@testable import PinwheelCore

@Suite("Last writer by observation time")
struct ObservationTimeTests {
    static func upsert(_ key: PointKey, _ lat: Double, at t: UInt64?, tag: String = "") -> Change {
        .upsert(key, lat: lat, lon: 0, properties: tag.isEmpty ? [:] : ["tag": .string(tag)], observed: t)
    }

    @Test("an upsert observed before the point's newest is dropped; the version still moves on")
    func olderUpsertDropped() {
        var table = PointTable(PointTableTests.base)
        let applied1 = table.apply(Self.upsert(.number(10), 1, at: 2000), version: 1)
        #expect(applied1)
        let applied2 = table.apply(Self.upsert(.number(10), 2, at: 1999), version: 2)
        #expect(!applied2)
        #expect(table.dataset.version == 2)
        #expect(table.coordinate(of: .number(10))?.lat == 1)
        #expect(table.observed(.number(10)) == 2000)
        // The same time again is applied, in log order.
        let applied3 = table.apply(Self.upsert(.number(10), 3, at: 2000), version: 3)
        #expect(applied3)
        #expect(table.coordinate(of: .number(10))?.lat == 3)
        let applied4 = table.apply(.delete(.number(10), observed: 1000), version: 4)
        #expect(!applied4)
        #expect(table.count == 3)
    }

    @Test("a delete leaves a tombstone: an older upsert does not bring the point back, a newer one does")
    func tombstones() {
        var table = PointTable(PointTableTests.base)
        table.apply(Self.upsert(.name("bus-1"), 1, at: 100), version: 1)
        let applied5 = table.apply(.delete(.name("bus-1"), observed: 200), version: 2)
        #expect(applied5)
        #expect(table.id(of: .name("bus-1")) == nil && table.tombstoneCount == 1)
        let applied6 = table.apply(Self.upsert(.name("bus-1"), 2, at: 150), version: 3)
        #expect(!applied6)
        #expect(table.id(of: .name("bus-1")) == nil && table.count == 3)
        let applied7 = table.apply(Self.upsert(.name("bus-1"), 3, at: 250), version: 4)
        #expect(applied7)
        #expect(table.coordinate(of: .name("bus-1"))?.lat == 3 && table.tombstoneCount == 0)
    }

    @Test("a delete that arrives first still keeps out the older upsert that arrives after it")
    func deleteBeforeUpsert() {
        var table = PointTable(PointTableTests.base)
        let applied8 = table.apply(.delete(.number(77), observed: 500), version: 1)
        #expect(applied8)
        let applied9 = table.apply(Self.upsert(.number(77), 1, at: 400), version: 2)
        #expect(!applied9)
        #expect(table.id(of: .number(77)) == nil && table.count == 3)
    }

    @Test("changes without a time are applied in log order, and keep the newest time known as the bar")
    func untimed() {
        var table = PointTable(PointTableTests.base)
        let applied10 = table.apply(Self.upsert(.number(20), 1, at: nil), version: 1)
        #expect(applied10)
        let applied11 = table.apply(Self.upsert(.number(20), 2, at: 500), version: 2)
        #expect(applied11)
        let applied12 = table.apply(Self.upsert(.number(20), 3, at: nil), version: 3)
        #expect(applied12)
        #expect(table.coordinate(of: .number(20))?.lat == 3 && table.observed(.number(20)) == 500)
        let applied13 = table.apply(Self.upsert(.number(20), 4, at: 499), version: 4)
        #expect(!applied13)
        let applied14 = table.apply(.delete(.number(20)), version: 5)
        #expect(applied14)
        #expect(table.observed(.number(20)) == 500 && table.tombstoneCount == 1)
        let applied15 = table.apply(Self.upsert(.number(20), 5, at: 499), version: 6)
        #expect(!applied15)
        #expect(table.id(of: .number(20)) == nil)
        // A point never given a time takes every change.
        let applied16 = table.apply(Self.upsert(.number(30), 6, at: nil), version: 7)
        #expect(applied16)
        let applied17 = table.apply(.delete(.number(30)), version: 8)
        #expect(applied17)
        #expect(table.tombstoneCount == 1 && table.observed(.number(30)) == nil)
    }

    @Test("the oldest tombstones are forgotten beyond the count kept")
    func tombstoneBound() {
        var table = PointTable(PointTableTests.base, keptTombstones: 3)
        for k in 0..<5 { table.apply(.delete(.number(UInt32(100 + k)), observed: 1000), version: UInt64(k + 1)) }
        #expect(table.tombstoneCount == 3)
        // 100 and 101 are forgotten: an older upsert creates the point; 102 is still kept out.
        let applied18 = table.apply(Self.upsert(.number(100), 1, at: 10), version: 6)
        #expect(applied18)
        let applied19 = table.apply(Self.upsert(.number(102), 1, at: 10), version: 7)
        #expect(!applied19)
        // A key buried again and again keeps one tombstone, and the bookkeeping stays bounded.
        for k in 0..<10_000 {
            table.apply(.delete(.number(200), observed: UInt64(2000 + k)), version: UInt64(8 + 2 * k))
            table.apply(Self.upsert(.number(200), 1, at: UInt64(2000 + k)), version: UInt64(9 + 2 * k))
        }
        // 102 was forgotten to make room for 200's first burial; 200 lives now.
        #expect(table.tombstoneCount == 2)
        #expect(table.observations.tombstonesInOrder.map(\.key) == [.number(103), .number(104)])
        #expect(table.observations.burialBacklog <= 2 * 3 + 1024 + 1)
    }

    /// Per key, the state its newest change leaves: its latitude and tag, nil when deleted.
    static func oracle(_ changes: [Change]) -> [PointKey: (lat: Double, tag: PropertyValue?)?] {
        var newest: [PointKey: Change] = [:]
        for change in changes where (newest[change.key]?.observed ?? 0) <= change.observed! {
            newest[change.key] = change
        }
        return newest.mapValues { change in
            guard case .upsert(_, let lat, _, let properties, _) = change else { return nil }
            return (lat, properties["tag"])
        }
    }

    @Test("histories reaching the log in any order end with each point's newest observation", arguments: 1...8)
    func reorderedHistoriesConverge(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let keys: [PointKey] = [.number(10), .number(20), .number(55), .name("a"), .name("b"), .name("c")]
        // Distinct times per key: equal ones would be applied in log order, which differs.
        var times = Array(UInt64(1)...UInt64(400)).shuffled(using: &random)
        var history: [Change] = []
        for _ in 0..<120 {
            let key = keys.randomElement(using: &random)!
            let t = times.removeLast()
            if Int.random(in: 0..<4, using: &random) == 0 {
                history.append(.delete(key, observed: t))
            } else {
                history.append(Self.upsert(key, Double(t) / 10, at: t, tag: "t\(t)"))
            }
        }
        let expected = Self.oracle(history)
        var snapshots: [[UInt8]] = []
        for _ in 0..<6 {
            let order = history.shuffled(using: &random)
            var table = PointTable(PointTableTests.base)
            // A restart from a snapshot part-way changes nothing.
            let cut = Int.random(in: 0...order.count, using: &random)
            for (k, change) in order[..<cut].enumerated() { table.apply(change, version: UInt64(k + 1)) }
            table = try PointTable(snapshot: table.snapshotBytes())
            for (k, change) in order[cut...].enumerated() { table.apply(change, version: UInt64(cut + k + 1)) }
            for key in keys {
                let now = table.id(of: key).flatMap { table.record(ofID: $0) }
                switch expected[key] {
                case .some(.some(let point)):
                    #expect(now?.position.lat == point.lat && now?.values.last ?? nil == point.tag, "\(key)")
                case .some(.none):
                    #expect(now == nil, "\(key) was deleted last")
                case .none:
                    #expect((now != nil) == (key == .number(10) || key == .number(20)), "\(key) untouched")
                }
            }
            var points = table.dataset.ids.indices.map { row in
                "\(table.dataset.names[table.dataset.ids[row]] ?? String(table.dataset.ids[row])) \(table.dataset.lat(row))"
            }
            points.sort()
            snapshots.append(Array(points.joined(separator: ",").utf8))
        }
        #expect(Set(snapshots).count == 1)
    }

    @Test("observation times and tombstones survive a snapshot, in format 3; a table without them is format 2")
    func snapshots() throws {
        var table = PointTable(PointTableTests.base)
        #expect(table.snapshotBytes()[4] == 2)
        table.apply(Self.upsert(.name("bus-1"), 1, at: 300), version: 1)
        table.apply(Self.upsert(.number(10), 1, at: 200), version: 2)
        table.apply(.delete(.number(20), observed: 100), version: 3)
        table.apply(.delete(.name("gone"), observed: 50), version: 4)
        let bytes = table.snapshotBytes()
        #expect(bytes[4] == 3)
        var copy = try PointTable(snapshot: bytes)
        #expect(copy.snapshotBytes() == bytes)
        for key in [PointKey.name("bus-1"), .number(10), .number(20), .name("gone")] {
            #expect(copy.observed(key) == table.observed(key))
        }
        let applied20 = copy.apply(Self.upsert(.number(20), 9, at: 99), version: 5)
        #expect(!applied20)
        let applied21 = copy.apply(Self.upsert(.name("gone"), 9, at: 49), version: 6)
        #expect(!applied21)
        let applied22 = copy.apply(Self.upsert(.number(10), 9, at: 201), version: 7)
        #expect(applied22)
        for n in 0..<bytes.count {
            #expect(throws: SnapshotError.self) { try PointTable(snapshot: Array(bytes[..<n])) }
        }
        var newer = bytes
        newer[4] = 4
        #expect(
            throws: SnapshotError(
                offset: 4, reason: "format 4, this build reads formats 1 to 3 (written by a newer build?)")
        ) { try PointTable(snapshot: newer) }
    }
}
