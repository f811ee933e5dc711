/// Scratch memory one build reuses for every zoom, sized for the raw level, so clustering a zoom
/// allocates only the arrays that zoom keeps. Pages are touched only as far as they are used.
final class BuildBuffers {
    let capacity: Int
    let stride: Int
    /// Work on at least this many items is split in two parts.
    let parallelFrom: Int
    /// Whether the two parts run at once, on two threads, or one after the other.
    let concurrently: Bool
    /// The zoom being made, in the order the sweep makes it: x at 2i, y at 2i+1.
    let xy: UnsafeMutablePointer<Double>
    let meta: UnsafeMutablePointer<UInt64>
    let reduced: UnsafeMutablePointer<Double>
    /// Neighbours found around the current seed, one buffer per sweeping thread.
    let neighbours: [UnsafeMutablePointer<Int32>]
    /// Grid rows of the source and the first item of each, plus a sentinel.
    let runRows: UnsafeMutablePointer<Int>
    let runStarts: UnsafeMutablePointer<Int>
    /// Radix sort keys and their scratch.
    let keys: UnsafeMutablePointer<UInt64>
    let keyScratch: UnsafeMutablePointer<UInt64>
    /// New position → old index.
    let order: UnsafeMutablePointer<UInt32>
    let orderScratch: UnsafeMutablePointer<UInt32>
    /// Old index → new position, then next-free child offsets.
    let position: UnsafeMutablePointer<Int32>

    init(capacity: Int, stride: Int, parallelFrom: Int, concurrently: Bool) {
        let c = max(capacity, 1)
        self.capacity = c
        self.stride = stride
        self.parallelFrom = parallelFrom
        self.concurrently = concurrently
        xy = .allocate(capacity: 2 * c)
        meta = .allocate(capacity: c)
        reduced = .allocate(capacity: max(1, stride * c))
        neighbours = [.allocate(capacity: c), .allocate(capacity: c)]
        runRows = .allocate(capacity: c + 2)
        runStarts = .allocate(capacity: c + 2)
        keys = .allocate(capacity: c)
        keyScratch = .allocate(capacity: c)
        order = .allocate(capacity: c)
        orderScratch = .allocate(capacity: c)
        position = .allocate(capacity: c)
    }

    deinit {
        xy.deallocate()
        reduced.deallocate()
        meta.deallocate()
        for p in [order, orderScratch] { p.deallocate() }
        for p in neighbours + [position] { p.deallocate() }
        runRows.deallocate()
        runStarts.deallocate()
        keys.deallocate()
        keyScratch.deallocate()
    }

    /// The permutation (new position → old index) ordering the first `count` items of ``xy`` by grid
    /// cell key, stable within a cell.
    func gridOrder(count: Int, bits: Int) -> UnsafeMutablePointer<UInt32> {
        let indexBits = 26
        if 2 * bits + indexBits <= 64 {
            // Cell key above the item's index in one word: one array to move, and unique keys keep
            // the order of equal cells as stable as the pair sort would.
            for i in 0..<count {
                keys[i] = GridOrder.key(x: xy[2 * i], y: xy[2 * i + 1], bits: bits) << UInt64(indexBits) | UInt64(i)
            }
            let inScratch = RadixSort.sortKeys(
                UnsafeMutableBufferPointer(start: keys, count: count),
                scratch: UnsafeMutableBufferPointer(start: keyScratch, count: count), lowBit: indexBits,
                bits: 2 * bits, parallel: concurrently && count >= parallelFrom)
            let sorted = inScratch ? keyScratch : keys
            let indexMask = UInt64((1 << indexBits) - 1)
            for i in 0..<count { order[i] = UInt32(sorted[i] & indexMask) }
            return order
        }
        for i in 0..<count {
            keys[i] = GridOrder.key(x: xy[2 * i], y: xy[2 * i + 1], bits: bits)
            order[i] = UInt32(i)
        }
        let inScratch = RadixSort.sort(
            keys: UnsafeMutableBufferPointer(start: keys, count: count),
            values: UnsafeMutableBufferPointer(start: order, count: count),
            keyScratch: UnsafeMutableBufferPointer(start: keyScratch, count: count),
            valueScratch: UnsafeMutableBufferPointer(start: orderScratch, count: count), bits: 2 * bits)
        return inScratch ? orderScratch : order
    }

    /// A new array of `count` items of `source` taken in `order`, `stride` values per item.
    func gather<T>(_ source: UnsafeMutablePointer<T>, _ order: UnsafeMutablePointer<UInt32>, count: Int, stride: Int)
        -> [T]
    {
        guard stride > 0 else { return [] }
        return [T](unsafeUninitializedCapacity: count * stride) { out, initialized in
            var at = 0
            for new in 0..<count {
                let from = Int(order[new]) * stride
                for s in 0..<stride { (out.baseAddress! + at + s).initialize(to: source[from + s]) }
                at += stride
            }
            initialized = count * stride
        }
    }
}
