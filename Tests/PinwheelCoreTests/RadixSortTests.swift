import Testing

@testable import PinwheelCore

@Suite("Radix sort")
struct RadixSortTests {
    @Test("sorts like a stable comparison sort for any number of key bits")
    func matchesStableSort() {
        for seed in UInt64(1)...12 {
            var rng = SplitMix64(seed: seed)
            let bits = Int(rng.next() % 64) + 1
            let n = Int(rng.next() % 5000)
            let mask = bits == 64 ? UInt64.max : (UInt64(1) << UInt64(bits)) - 1
            // Few distinct keys, so stability is exercised.
            var keys = (0..<n).map { _ in (rng.next() % 97 &* 0x9E37_79B9_7F4A_7C15) & mask }
            var values = (0..<n).map { UInt32($0) }
            let expected = zip(keys, values).sorted { ($0.0, $0.1) < ($1.0, $1.1) }
            RadixSort.sort(keys: &keys, values: &values, bits: bits)
            #expect(keys == expected.map(\.0))
            #expect(values == expected.map(\.1))
        }
    }
}
