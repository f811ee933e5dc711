/// A stable least-significant-digit radix sort of 64-bit keys carrying 32-bit values, used wherever
/// the index orders millions of items (grid cell keys, coordinate hashes) without comparison sorting.
enum RadixSort {
    /// Most bits consumed per pass: 4,096 32-bit counters (16 KB) stay in L1 while a pass streams the data.
    static let maxDigitBits = 12

    /// Sorts `keys` ascending, permuting `values` with them; equal keys keep their order.
    /// - Parameters:
    ///   - keys: the sort keys; only the low `bits` bits are looked at.
    ///   - values: moved along with their keys; same count as `keys`.
    ///   - bits: how many low bits of the keys matter (at most 64).
    /// - Complexity: O(n · ⌈bits / 12⌉).
    static func sort(keys: inout [UInt64], values: inout [UInt32], bits: Int) {
        precondition(keys.count == values.count && keys.count <= Int(UInt32.max), "one value per key, < 2^32 keys")
        let n = keys.count
        guard n > 1, bits > 0 else { return }
        var keyScratch = [UInt64](unsafeUninitializedCapacity: n) { _, count in count = n }
        var valueScratch = [UInt32](unsafeUninitializedCapacity: n) { _, count in count = n }
        let inScratch = keys.withUnsafeMutableBufferPointer { k in
            values.withUnsafeMutableBufferPointer { v in
                keyScratch.withUnsafeMutableBufferPointer { ks in
                    valueScratch.withUnsafeMutableBufferPointer { vs in
                        sort(keys: k, values: v, keyScratch: ks, valueScratch: vs, bits: bits)
                    }
                }
            }
        }
        if inScratch {
            swap(&keys, &keyScratch)
            swap(&values, &valueScratch)
        }
    }

    /// The sort on caller-owned buffers of equal length.
    /// - Returns: true when the sorted data ended up in the scratch buffers, false when in `keys`/`values`.
    static func sort(
        keys: UnsafeMutableBufferPointer<UInt64>, values: UnsafeMutableBufferPointer<UInt32>,
        keyScratch: UnsafeMutableBufferPointer<UInt64>, valueScratch: UnsafeMutableBufferPointer<UInt32>,
        bits: Int
    ) -> Bool {
        let n = keys.count
        guard n > 1, bits > 0 else { return false }
        let totalBits = min(bits, 64)
        // Equal digits, as few passes as the 12-bit limit allows (36 bits: 3 passes of 12).
        let passes = (totalBits + maxDigitBits - 1) / maxDigitBits
        let digitBits = (totalBits + passes - 1) / passes
        var inScratch = false
        return withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 1 << digitBits) { counts in
            var shift: UInt64 = 0
            for pass in 0..<passes {
                // The last digit may be narrower: bits above the range must not count.
                let mask = UInt64((1 << min(digitBits, totalBits - pass * digitBits)) - 1)
                let (srcK, srcV, dstK, dstV) =
                    inScratch ? (keyScratch, valueScratch, keys, values) : (keys, values, keyScratch, valueScratch)
                for d in 0..<counts.count { counts[d] = 0 }
                for i in 0..<n { counts[Int((srcK[i] >> shift) & mask)] += 1 }
                shift += UInt64(digitBits)
                // A digit every key shares moves nothing; skip the scatter.
                if counts[Int((srcK[0] >> (shift - UInt64(digitBits))) & mask)] == UInt32(n) { continue }
                var total: UInt32 = 0
                for d in 0..<counts.count {
                    let c = counts[d]
                    counts[d] = total
                    total += c
                }
                let digitShift = shift - UInt64(digitBits)
                for i in 0..<n {
                    let key = srcK[i]
                    let d = Int((key >> digitShift) & mask)
                    let at = counts[d]
                    counts[d] = at &+ 1
                    dstK[Int(at)] = key
                    dstV[Int(at)] = srcV[i]
                }
                inScratch.toggle()
            }
            return inScratch
        }
    }

    /// Sorts keys alone by bits `lowBit ..< lowBit + bits`, on caller-owned buffers of equal length.
    /// Packing a payload into the low bits (a key's index, say) moves one array instead of two.
    /// - Parameter parallel: split every pass over two threads (each counts and moves one half; the
    ///   second half's keys go after the first half's within a digit, so the result is the same).
    /// - Returns: true when the sorted keys ended up in `scratch`, false when in `keys`.
    static func sortKeys(
        _ keys: UnsafeMutableBufferPointer<UInt64>, scratch: UnsafeMutableBufferPointer<UInt64>, lowBit: Int, bits: Int,
        parallel: Bool = false
    ) -> Bool {
        let n = keys.count
        guard n > 1, bits > 0 else { return false }
        let totalBits = min(bits, 64 - lowBit)
        let passes = (totalBits + maxDigitBits - 1) / maxDigitBits
        let digitBits = (totalBits + passes - 1) / passes
        let parts = parallel ? 2 : 1
        let bounds = [0, parts == 1 ? n : n / 2, n]
        var inScratch = false
        return withUnsafeTemporaryAllocation(of: UInt32.self, capacity: parts << digitBits) { allCounts in
            let digits = 1 << digitBits
            var shift = UInt64(lowBit)
            for pass in 0..<passes {
                let mask = UInt64((1 << min(digitBits, totalBits - pass * digitBits)) - 1)
                let (src, dst) = inScratch ? (scratch, keys) : (keys, scratch)
                for d in 0..<allCounts.count { allCounts[d] = 0 }
                Parallel.run(parts) { part in
                    let counts = allCounts.baseAddress! + part * digits
                    for i in bounds[part]..<bounds[part + 1] { counts[Int((src[i] >> shift) & mask)] &+= 1 }
                }
                defer { shift += UInt64(digitBits) }
                let first = Int((src[0] >> shift) & mask)
                if (0..<parts).reduce(0, { $0 + Int(allCounts[$1 * digits + first]) }) == n { continue }
                // Offsets: digit by digit, the first part's keys, then the second's.
                var total: UInt32 = 0
                for d in 0..<digits {
                    for part in 0..<parts {
                        let c = allCounts[part * digits + d]
                        allCounts[part * digits + d] = total
                        total &+= c
                    }
                }
                Parallel.run(parts) { part in
                    let offsets = allCounts.baseAddress! + part * digits
                    for i in bounds[part]..<bounds[part + 1] {
                        let key = src[i]
                        let d = Int((key >> shift) & mask)
                        let at = offsets[d]
                        offsets[d] = at &+ 1
                        dst[Int(at)] = key
                    }
                }
                inScratch.toggle()
            }
            return inScratch
        }
    }
}
