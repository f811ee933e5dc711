import Testing

@testable import PinwheelCore

@Suite("Adjustment chunks")
struct AdjustmentChunksTests {
    @Test("sums what is added to each item, across chunk boundaries, like an array does")
    func matchesAnArray() {
        var rng = SplitMix64(seed: 5)
        for count in [0, 1, 16_383, 16_384, 40_000] {
            var chunks = AdjustmentChunks(count: count)
            var array = [ItemAdjustment](repeating: ItemAdjustment(), count: count)
            #expect(chunks.isEmpty == (count == 0))
            for _ in 0..<(count == 0 ? 0 : 2_000) {
                let item = Int(rng.next() % UInt64(count))
                let (x, y) = (rng.nextUnit(), rng.nextUnit())
                let by: Int32 = rng.next() % 2 == 0 ? 1 : -1
                chunks.add(by, x, y, to: item)
                ItemAdjustment.add(by, x, y, to: &array[item])
            }
            #expect((0..<count).allSatisfy { chunks[$0] == array[$0] }, "\(count) items")
        }
    }

    @Test("a copy keeps what it held when the original changes, as a published live index needs")
    func copiesAreIndependent() {
        var original = AdjustmentChunks(count: 40_000)
        original.add(1, 0.5, 0.5, to: 20_000)
        let published = original
        original.add(1, 0.25, 0.25, to: 20_000)
        original.add(1, 0.25, 0.25, to: 3)
        #expect(published[20_000].count == 1 && published[3].count == 0)
        #expect(original[20_000].count == 2 && original[3].count == 1)
    }
}
