/// Bounds the work one viewport can cause: past `limit` features, only the `limit` nearest the
/// viewport's centre are kept, the ones a person looks at first.
public enum FeatureCap {
    /// Keeps the `limit` features nearest `centre` (equal distances: the smaller id first, so the choice
    /// is deterministic), in their original order.
    /// - Returns: how many features there were before the cut.
    /// - Complexity: O(n) on average (a selection, not a sort).
    public static func keepNearest(_ features: inout [Feature], limit: Int, centre: Coordinate) -> Int {
        let total = features.count
        guard total > limit else { return total }
        guard limit > 0 else {
            features.removeAll(keepingCapacity: true)
            return total
        }
        let distance = CentreDistance(centre)
        var keys = features.indices.map { k in
            Key(distance: distance(lat: features[k].lat, lon: features[k].lon), id: features[k].id, index: k)
        }
        select(&keys, count: limit)
        let kept = keys[..<limit].map(\.index).sorted()
        features = kept.map { features[$0] }
        return total
    }

    private struct Key {
        var distance: Double
        var id: FeatureID
        var index: Int

        func precedes(_ other: Key) -> Bool {
            distance != other.distance ? distance < other.distance : id < other.id
        }
    }

    // Hoare's quickselect: afterwards keys[..<count] are the `count` smallest, in no particular order.
    private static func select(_ keys: inout [Key], count: Int) {
        var low = 0
        var high = keys.count - 1
        while low < high {
            // Median of three as the pivot keeps sorted or reversed input linear.
            let mid = low + (high - low) / 2
            if keys[mid].precedes(keys[low]) { keys.swapAt(mid, low) }
            if keys[high].precedes(keys[low]) { keys.swapAt(high, low) }
            if keys[high].precedes(keys[mid]) { keys.swapAt(high, mid) }
            let pivot = keys[mid]
            var i = low
            var j = high
            while i <= j {
                while keys[i].precedes(pivot) { i += 1 }
                while pivot.precedes(keys[j]) { j -= 1 }
                if i <= j {
                    keys.swapAt(i, j)
                    i += 1
                    j -= 1
                }
            }
            // keys[low...j] ≤ pivot ≤ keys[i...high]; keep the side holding position count - 1.
            if count - 1 <= j {
                high = j
            } else if count - 1 >= i {
                low = i
            } else {
                return
            }
        }
    }
}
