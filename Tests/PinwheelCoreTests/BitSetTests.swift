import Testing

@testable import PinwheelCore

@Suite("Bit set")
struct BitSetTests {
    @Test("holds what was inserted, like a Set, across word boundaries; nothing outside its range")
    func matchesSet() {
        var rng = SplitMix64(seed: 7)
        for count in [0, 1, 63, 64, 65, 1000] {
            var bits = BitSet(count: count)
            var expected = Set<Int>()
            for _ in 0..<(count / 2) {
                let i = Int(rng.next() % UInt64(count))
                bits.insert(i)
                expected.insert(i)
            }
            #expect((0..<count).filter(bits.contains) == expected.sorted())
            #expect(!bits.contains(-1) && !bits.contains(count))
        }
    }

    @Test("a copy keeps what it held when the original changes, as a published live index needs")
    func copiesAreIndependent() {
        var original = BitSet(count: 200)
        original.insert(3)
        let published = original
        original.insert(150)
        #expect(published.contains(3) && !published.contains(150))
        #expect(original.contains(3) && original.contains(150))
    }

    @Test("counts and lists what it holds in a range, as a filter over the set does, ranges clamped")
    func ranges() {
        var rng = SplitMix64(seed: 11)
        for count in [0, 1, 63, 64, 65, 200, 1000] {
            var bits = BitSet(count: count)
            for _ in 0..<(count / 3) { bits.insert(Int(rng.next() % UInt64(count))) }
            for _ in 0..<200 {
                let a = Int(rng.next() % UInt64(count + 3)) - 1
                let b = a + Int(rng.next() % 140)
                let inside = (max(a, 0)..<max(min(b, count), max(a, 0))).filter(bits.contains)
                var listed: [Int] = []
                bits.forEach(in: a..<b) { listed.append($0) }
                #expect(listed == inside, "\(a)..<\(b) of \(count)")
                #expect(bits.count(in: a..<b) == inside.count, "\(a)..<\(b) of \(count)")
            }
        }
    }
}
