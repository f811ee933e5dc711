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
            // Few distinct keys, so stability is exercised; bits above the range must be ignored.
            var keys = (0..<n).map { _ in (rng.next() % 97 &* 0x9E37_79B9_7F4A_7C15) }
            var values = (0..<n).map { UInt32($0) }
            let expected = zip(keys, values).sorted { ($0.0 & mask, $0.1) < ($1.0 & mask, $1.1) }
            RadixSort.sort(keys: &keys, values: &values, bits: bits)
            #expect(keys == expected.map(\.0))
            #expect(values == expected.map(\.1))
        }
    }
}

extension RadixSortTests {
    @Test("sorting packed keys by a bit range, on one or two threads, orders like a stable sort of that range")
    func packedKeys() {
        for seed in UInt64(20)...30 {
            var rng = SplitMix64(seed: seed)
            let n = Int(rng.next() % 4000) + 2
            let lowBit = Int(rng.next() % 30)
            let bits = Int(rng.next() % UInt64(64 - lowBit)) + 1
            let keys = (0..<n).map { _ in rng.next() }
            let mask: UInt64 = bits == 64 ? .max : (1 << UInt64(bits)) - 1
            let field = { (key: UInt64) in (key >> UInt64(lowBit)) & mask }
            let expected = keys.enumerated().sorted {
                (field($0.element), $0.offset) < (field($1.element), $1.offset)
            }
            for parallel in [false, true] {
                var sorted = keys
                var scratch = [UInt64](repeating: 0, count: n)
                let inScratch = sorted.withUnsafeMutableBufferPointer { k in
                    scratch.withUnsafeMutableBufferPointer { s in
                        RadixSort.sortKeys(k, scratch: s, lowBit: lowBit, bits: bits, parallel: parallel)
                    }
                }
                #expect((inScratch ? scratch : sorted) == expected.map(\.element), "parallel \(parallel)")
            }
        }
    }
}
