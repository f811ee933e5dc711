/// A set of integers in `0..<count`, one bit each. A value type over one array: a copy shares the
/// bits until either changes, and then costs `count / 8` bytes, which is what lets a published live
/// index keep the flags of the moment it was made.
struct BitSet: Sendable, Equatable {
    private var words: [UInt64]
    /// One more than the largest integer the set can hold.
    let count: Int

    /// An empty set for integers below `count`.
    init(count: Int) {
        self.count = count
        words = Array(repeating: 0, count: (count + 63) >> 6)
    }

    /// Whether `i` is in the set; false for any integer outside `0..<count`.
    func contains(_ i: Int) -> Bool {
        guard i >= 0 && i < count else { return false }
        return words[i >> 6] & (1 << UInt64(i & 63)) != 0
    }

    /// Bytes of its words.
    var storedBytes: Int { words.count * 8 }

    /// Adds `i`, which must be below `count`.
    mutating func insert(_ i: Int) {
        words[i >> 6] |= 1 << UInt64(i & 63)
    }
}

extension BitSet {
    /// How many of the integers in `range` the set holds, a word at a time.
    func count(in range: Range<Int>) -> Int {
        var total = 0
        forEachWord(in: range) { _, bits in total += bits.nonzeroBitCount }
        return total
    }

    /// Calls `body` with each integer in `range` the set holds, in ascending order.
    func forEach(in range: Range<Int>, _ body: (Int) -> Void) {
        forEachWord(in: range) { word, bits in
            var bits = bits
            while bits != 0 {
                body(word << 6 | bits.trailingZeroBitCount)
                bits &= bits - 1
            }
        }
    }

    /// Calls `body` with each word that overlaps `range`, masked to the bits inside it, and its index.
    private func forEachWord(in range: Range<Int>, _ body: (Int, UInt64) -> Void) {
        let range = range.clamped(to: 0..<count)
        guard !range.isEmpty else { return }
        let (first, last) = (range.lowerBound >> 6, (range.upperBound - 1) >> 6)
        words.withUnsafeBufferPointer { words in
            for w in first...last {
                var bits = words[w]
                if w == first { bits &= ~0 << UInt64(range.lowerBound & 63) }
                if w == last { bits &= ~0 >> UInt64(63 - (range.upperBound - 1) & 63) }
                if bits != 0 { body(w, bits) }
            }
        }
    }
}
