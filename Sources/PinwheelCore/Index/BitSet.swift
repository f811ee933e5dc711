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

    /// Adds `i`, which must be below `count`.
    mutating func insert(_ i: Int) {
        words[i >> 6] |= 1 << UInt64(i & 63)
    }
}
