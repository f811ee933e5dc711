import Testing

@testable import PinwheelCore

@Suite("What a client has: an open-addressing table over dense slots")
struct ClientFeatureSetTests {
    /// What the set must answer for one id, kept in a Dictionary.
    struct Drawn: Equatable {
        var version: FeatureVersion
        var parent: FeatureID?
        var lat: Float
        var lon: Float
    }

    @Test("answers exactly what a Dictionary does through growth, removals and shrinking, over many seeds")
    func againstDictionary() {
        for seed in 0..<40 as Range<UInt64> {
            var rng = SeededRandom(seed: seed)
            var set = ClientFeatureSet()
            var model: [FeatureID: Drawn] = [:]
            // Point ids and cluster ids (above 2^32) from a small pool, so ids come back after removal.
            let size = Int(rng.next() % 3_000) + 50
            let pool: [FeatureID] = (0..<size).map { (k: Int) -> FeatureID in
                let id = FeatureID(k)
                return k % 3 == 0 ? id : (1 << 32) + id * 977
            }
            // Phases that mostly add, then mostly remove, so the table grows and shrinks.
            for phase in 0..<6 {
                let addShare: UInt64 = phase % 2 == 0 ? 8 : 2
                for _ in 0..<pool.count * 2 {
                    let id = pool[Int(rng.next() % UInt64(pool.count))]
                    if rng.next() % 10 < addShare {
                        let drawn = Drawn(
                            version: rng.next() % 4, parent: rng.next() % 2 == 0 ? nil : pool[Int(rng.next() % 7)],
                            lat: Float(rng.next() % 90), lon: Float(rng.next() % 180))
                        set.insert(id: id, version: drawn.version, parent: drawn.parent, lat: drawn.lat, lon: drawn.lon)
                        model[id] = drawn
                    } else {
                        set.remove(id)
                        model[id] = nil
                    }
                }
                #expect(set.count == model.count)
                #expect(Set(set.ids) == Set(model.keys))
                for id in pool {
                    let drawn = set.slot(of: id).map { slot -> Drawn in
                        let p = set.position(of: id)!
                        #expect(set.ids[slot] == id)
                        return Drawn(
                            version: set.version(atSlot: slot), parent: set.parent(of: id), lat: Float(p.lat),
                            lon: Float(p.lon))
                    }
                    #expect(drawn == model[id], "seed \(seed), phase \(phase), id \(id)")
                    #expect(set.contains(id) == (model[id] != nil))
                }
            }
        }
    }

    @Test("an empty set has nothing, and removing what it lacks changes nothing")
    func empty() {
        var set = ClientFeatureSet()
        #expect(!set.contains(0) && set.slot(of: .max) == nil && set.version(of: 7) == nil)
        set.remove(7)
        #expect(set.count == 0)
        set.insert(pin(7))
        set.remove(8)
        #expect(set.ids == [7])
    }
}
