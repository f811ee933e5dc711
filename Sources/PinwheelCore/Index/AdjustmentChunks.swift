/// A coarse level's adjustments by item (``ClusterDelta``), in chunks that each copy on write. A
/// publication's first change to a chunk copies that chunk alone, and a chunk is small enough
/// (384 kB) to come from the allocator's heap, where a freed one is used again, rather than from
/// pages the kernel must map and clear at every copy, as one array of a level's 5 MB would be.
struct AdjustmentChunks: Sendable {
    private var chunks: [[ItemAdjustment]]
    /// Items per chunk: a power of two.
    private static let chunkBits = 14
    private static let chunkMask = (1 << chunkBits) - 1

    /// Nothing adjusted, for a level of `count` items.
    init(count: Int) {
        let size = 1 << Self.chunkBits
        chunks = stride(from: 0, to: count, by: size).map {
            Array(repeating: ItemAdjustment(), count: min(size, count - $0))
        }
    }

    /// Bytes of its chunks.
    var storedBytes: Int { chunks.reduce(0) { $0 + $1.count } * MemoryLayout<ItemAdjustment>.stride }

    /// True for a level of no items (and for the fine levels, which keep none).
    var isEmpty: Bool { chunks.isEmpty }

    subscript(item: Int) -> ItemAdjustment {
        chunks[item >> Self.chunkBits][item & Self.chunkMask]
    }

    /// Adds (or takes away) a point's share of item `item`.
    mutating func add(_ count: Int32, _ x: Double, _ y: Double, to item: Int) {
        ItemAdjustment.add(count, x, y, to: &chunks[item >> Self.chunkBits][item & Self.chunkMask])
    }
}
