import Testing

@testable import PinwheelCore

/// A feature for streaming tests.
func pin(_ id: FeatureID, lat: Double = 0, lon: Double = 0, count: UInt32 = 1, parent: FeatureID? = nil) -> Feature {
    Feature(id: id, lat: lat, lon: lon, count: count, parent: parent, row: count == 1 ? 0 : -1)
}

/// What a client set holds, as id → version.
func versions(_ set: ClientFeatureSet) -> [FeatureID: FeatureVersion] {
    Dictionary(uniqueKeysWithValues: set.ids.map { ($0, set.version(of: $0)!) })
}

func versions(_ features: [Feature]) -> [FeatureID: FeatureVersion] {
    Dictionary(features.map { ($0.id, $0.version) }, uniquingKeysWith: { a, _ in a })
}

@Suite("Viewport diff")
struct ViewportDiffTests {
    @Test("applying the diff to the old set gives exactly the new set, over many random seeds")
    func property() {
        var diff = ViewportDiff()
        for seed in 0..<300 as Range<UInt64> {
            var rng = SeededRandom(seed: seed)
            let pool = Int(rng.next() % 400) + 1
            func randomSet() -> [Feature] {
                (0..<pool).compactMap { id -> Feature? in
                    guard rng.next() % 3 != 0 else { return nil }
                    // Few positions and counts, so some features keep their version and some change.
                    return pin(
                        FeatureID(id), lat: Double(rng.next() % 3), lon: Double(rng.next() % 2),
                        count: UInt32(rng.next() % 2 + 1))
                }
            }
            var client = ClientFeatureSet()
            for f in randomSet() { client.insert(f) }
            let before = versions(client)
            let target = randomSet()
            diff.compute(from: client, to: target)
            #expect(diff.remove.allSatisfy { before[$0] != nil })
            #expect(diff.add.allSatisfy { before[$0.id] == nil })
            #expect(diff.update.allSatisfy { before[$0.id] != nil && before[$0.id] != $0.version })
            client.apply(remove: diff.remove, add: diff.add, update: diff.update)
            #expect(versions(client) == versions(target), "seed \(seed)")
            // Diffing against the result again finds nothing.
            diff.compute(from: client, to: target)
            #expect(diff.isEmpty)
        }
    }

    @Test("the client set's dense slots stay consistent through random inserts and removes")
    func slots() {
        var rng = SeededRandom(seed: 5)
        var set = ClientFeatureSet()
        var model: [FeatureID: FeatureVersion] = [:]
        for _ in 0..<20_000 {
            let id = FeatureID(rng.next() % 300)
            if rng.next() % 3 == 0 {
                set.remove(id)
                model[id] = nil
            } else {
                let f = pin(id, lat: Double(rng.next() % 4))
                set.insert(f)
                model[id] = f.version
            }
        }
        #expect(versions(set) == model)
        #expect(set.ids.count == model.count && Set(set.ids).count == model.count)
        #expect(set.ids.indices.allSatisfy { set.slot(of: set.ids[$0]) == $0 })
    }

    @Test("a moved or recounted feature is an update, an unchanged one is nothing")
    func updates() {
        var client = ClientFeatureSet()
        client.insert(pin(1, lat: 1, lon: 1, count: 5))
        client.insert(pin(2, lat: 1, lon: 1, count: 5))
        client.insert(pin(3, lat: 1, lon: 1, count: 5))
        var diff = ViewportDiff()
        diff.compute(
            from: client,
            to: [
                pin(1, lat: 1, lon: 1, count: 5), pin(2, lat: 1, lon: 1.5, count: 5),
                pin(3, lat: 1, lon: 1, count: 6), pin(4),
            ])
        #expect(diff.update.map(\.id) == [2, 3])
        #expect(diff.add.map(\.id) == [4])
        #expect(diff.remove.isEmpty)
    }

    @Test("a binary client gets a cluster again once it moved a grid step or was recounted; a point whenever it moved")
    func binaryGrid() {
        // A zoom-5 cluster (tag 6): its binary grid is 8,192e-7°, about a 32nd of a pixel at zoom 5.
        let cluster: FeatureID = 6 << 32 | 17
        let nudged = [
            pin(cluster, lat: 50, lon: 10.0001, count: 40), pin(1, lat: 50.000_000_3, lon: 10),
            pin(cluster + 1, lat: 50, lon: 10.002, count: 40), pin(cluster + 2, lat: 50, lon: 10, count: 41),
        ]
        for (encoding, expected) in [
            (WireEncoding.json, [cluster, 1, cluster + 1, cluster + 2]), (.binary, [1, cluster + 1, cluster + 2]),
        ] {
            var client = ClientFeatureSet(encoding: encoding)
            for id in [cluster, cluster + 1, cluster + 2] { client.insert(pin(id, lat: 50, lon: 10, count: 40)) }
            client.insert(pin(1, lat: 50, lon: 10))
            var diff = ViewportDiff()
            diff.compute(from: client, to: nudged)
            #expect(diff.update.map(\.id) == expected, "\(encoding)")
            client.apply(remove: diff.remove, add: diff.add, update: diff.update)
            diff.compute(from: client, to: nudged)
            #expect(diff.isEmpty, "\(encoding)")
        }
    }

    @Test("an empty target removes everything; an empty client adds everything; a repeated id counts once")
    func edges() {
        var client = ClientFeatureSet()
        for id in [3, 1, 2] as [FeatureID] { client.insert(pin(id)) }
        var diff = ViewportDiff()
        diff.compute(from: client, to: [Feature]())
        #expect(diff.remove == [1, 2, 3])
        diff.compute(from: ClientFeatureSet(), to: [pin(7), pin(7, lat: 5), pin(8)])
        #expect(diff.add.map(\.id) == [7, 8] && diff.add[0].lat == 0)
    }

    @Test("the diff reuses its buffers: capacity stops growing across viewports")
    func reuse() {
        var diff = ViewportDiff()
        var client = ClientFeatureSet()
        let a = (0..<1000).map { pin(FeatureID($0)) }
        let b = (500..<1500).map { pin(FeatureID($0)) }
        diff.compute(from: client, to: a)
        client.apply(remove: diff.remove, add: diff.add, update: diff.update)
        diff.compute(from: client, to: b)
        let capacities = (diff.remove.capacity, diff.add.capacity)
        for _ in 0..<5 {
            diff.compute(from: client, to: b)
            #expect(diff.remove.capacity == capacities.0 && diff.add.capacity == capacities.1)
        }
    }
}
