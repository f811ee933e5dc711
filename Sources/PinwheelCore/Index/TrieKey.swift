/// A key of the live delta's persistent maps (a level's items, grid cells) that makes its own hash.
/// Those maps are hash tries that place a key by five bits of its hash per level, lowest first, and
/// a hash spreads keys at random: each lookup of a query then walks its own path of nodes, a cache
/// miss at each. The hash here is the key's bits reversed, so the trie branches on its highest bits
/// first and keys close together share the upper nodes. A query reads items close together (a
/// level's items are numbered in grid order), and the nodes its lookups share stay in the cache.
/// Distinct keys keep distinct hashes, and a trie of them is at most seven levels deep. Not a key
/// for Swift's `Dictionary` or `Set`: they take a bucket from a hash's low bits, which for small
/// numbers reversed are all zero.
struct TrieKey: Hashable, Sendable {
    let value: UInt32

    init(_ value: some BinaryInteger) {
        self.value = UInt32(truncatingIfNeeded: value)
    }

    func _rawHashValue(seed: Int) -> Int {
        var v = value
        v = (v >> 1) & 0x5555_5555 | (v & 0x5555_5555) << 1
        v = (v >> 2) & 0x3333_3333 | (v & 0x3333_3333) << 2
        v = (v >> 4) & 0x0F0F_0F0F | (v & 0x0F0F_0F0F) << 4
        return Int(v.byteSwapped)
    }
}
