/// A stable least-significant-digit radix sort of 64-bit keys carrying 32-bit values, used wherever
/// the index orders millions of items (Morton codes, coordinate hashes) without comparison sorting.
enum RadixSort {
    /// Bits consumed per pass: 2,048 buckets keep the histogram in L1 while a pass streams the data.
    static let digitBits = 11

    /// Sorts `keys` ascending, permuting `values` with them; equal keys keep their order.
    /// - Parameters:
    ///   - keys: the sort keys; only the low `bits` bits are looked at.
    ///   - values: moved along with their keys; same count as `keys`.
    ///   - bits: how many low bits of the keys matter (at most 64).
    /// - Complexity: O(n · bits / 11).
    static func sort(keys: inout [UInt64], values: inout [UInt32], bits: Int) {
        precondition(keys.count == values.count, "one value per key")
        let n = keys.count
        guard n > 1, bits > 0 else { return }
        var keyScratch = [UInt64](repeating: 0, count: n)
        var valueScratch = [UInt32](repeating: 0, count: n)
        var counts = [Int](repeating: 0, count: 1 << digitBits)
        let mask = UInt64((1 << digitBits) - 1)
        var inScratch = false
        var shift = 0
        while shift < min(bits, 64) {
            counts.withUnsafeMutableBufferPointer { counts in
                for i in 0..<counts.count { counts[i] = 0 }
                keys.withUnsafeMutableBufferPointer { k in
                    values.withUnsafeMutableBufferPointer { v in
                        keyScratch.withUnsafeMutableBufferPointer { ks in
                            valueScratch.withUnsafeMutableBufferPointer { vs in
                                let (srcK, srcV, dstK, dstV) = inScratch ? (ks, vs, k, v) : (k, v, ks, vs)
                                for i in 0..<n { counts[Int((srcK[i] >> UInt64(shift)) & mask)] += 1 }
                                // A digit every key shares moves nothing; skip the scatter.
                                if counts[Int((srcK[0] >> UInt64(shift)) & mask)] == n { return }
                                var total = 0
                                for d in 0..<counts.count {
                                    let c = counts[d]
                                    counts[d] = total
                                    total += c
                                }
                                for i in 0..<n {
                                    let key = srcK[i]
                                    let d = Int((key >> UInt64(shift)) & mask)
                                    let at = counts[d]
                                    counts[d] = at + 1
                                    dstK[at] = key
                                    dstV[at] = srcV[i]
                                }
                                inScratch.toggle()
                            }
                        }
                    }
                }
            }
            shift += digitBits
        }
        if inScratch {
            swap(&keys, &keyScratch)
            swap(&values, &valueScratch)
        }
    }
}
