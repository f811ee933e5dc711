import HashTreeCollections
import Testing

@testable import PinwheelCore

@Suite("Trie keys")
struct TrieKeyTests {
    @Test("a key's hash is its 32 bits reversed, so the trie branches on its highest bits first")
    func reversedBits() {
        #expect(TrieKey(1)._rawHashValue(seed: 0) == 1 << 31)
        #expect(TrieKey(UInt32(1) << 31)._rawHashValue(seed: 0) == 1)
        #expect(TrieKey(0b1011)._rawHashValue(seed: 0) == 0b1101 << 28)
        #expect(TrieKey(UInt32.max)._rawHashValue(seed: 0) == Int(UInt32.max))
        // Neighbours agree in the hash's lowest bits, which pick the trie's upper nodes.
        #expect(TrieKey(4096)._rawHashValue(seed: 0) & 0xFFFFF == TrieKey(4097)._rawHashValue(seed: 0) & 0xFFFFF)
    }

    @Test("a persistent map keyed by them holds what a dictionary does", arguments: [UInt64(1), 2, 3])
    func mapAgreesWithDictionary(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var trie: TreeDictionary<TrieKey, Int> = [:]
        var reference: [UInt32: Int] = [:]
        for step in 0..<20_000 {
            // Runs of neighbours, as a query's items are, and keys anywhere below 2^32.
            let key =
                random.nextUnit() < 0.7 ? UInt32(random.next() % 4096) : UInt32(truncatingIfNeeded: random.next())
            if random.nextUnit() < 0.3 {
                #expect(trie.removeValue(forKey: TrieKey(key)) == reference.removeValue(forKey: key))
            } else {
                trie[TrieKey(key)] = step
                reference[key] = step
            }
        }
        #expect(trie.count == reference.count)
        for (key, value) in reference { #expect(trie[TrieKey(key)] == value) }
    }
}
