/// Finds the row of a dataset id in O(log n) without a hash table: when ids already increase with the
/// row (the common case: generated or sorted data) it searches the ids themselves, otherwise a sorted
/// copy of (id, row) pairs packed into one word each.
struct IDLookup: Sendable {
    /// Empty when ids increase with the row; otherwise `id << 32 | row`, sorted.
    private let packed: [UInt64]
    /// The ids, when they increase with the row.
    private let ids: [UInt32]

    init(ids: [UInt32]) {
        var increasing = true
        for i in ids.indices.dropFirst() where ids[i] <= ids[i - 1] {
            increasing = false
            break
        }
        if increasing {
            self.ids = ids
            packed = []
        } else {
            self.ids = []
            var packed = [UInt64](repeating: 0, count: ids.count)
            for (row, id) in ids.enumerated() { packed[row] = UInt64(id) << 32 | UInt64(row) }
            packed.sort()
            self.packed = packed
        }
    }

    /// Bytes of its own (the ids it searches are the dataset's, shared).
    var storedBytes: Int { packed.count * 8 }

    /// The row holding `id`, or nil.
    /// - Complexity: O(log n).
    func row(of id: UInt32) -> Int? {
        if packed.isEmpty {
            let i = lowerBound(ids.count) { ids[$0] < id }
            return i < ids.count && ids[i] == id ? i : nil
        }
        let key = UInt64(id) << 32
        let i = lowerBound(packed.count) { packed[$0] < key }
        guard i < packed.count, packed[i] >> 32 == UInt64(id) else { return nil }
        return Int(packed[i] & 0xFFFF_FFFF)
    }

    /// The first index in 0..<count for which `isBefore` is false.
    private func lowerBound(_ count: Int, _ isBefore: (Int) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let mid = (low + high) / 2
            if isBefore(mid) { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
