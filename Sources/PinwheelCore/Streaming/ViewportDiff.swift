/// The difference between what a client has and what it should have, in buffers reused from one
/// viewport to the next.
public struct ViewportDiff: Sendable {
    /// Ids the client has that are not in the target.
    public private(set) var remove: [FeatureID] = []
    /// Target features the client does not have, in target order.
    public private(set) var add: [Feature] = []
    /// Target features the client has in another version (moved or recounted), in target order.
    public private(set) var update: [Feature] = []
    /// Per client slot: seen in the target.
    private var seen: [Bool] = []
    /// Ids added so far, to count a repeated new id once.
    private var added = Set<FeatureID>()

    public init() {}

    /// Markers the diff touches.
    public var count: Int { remove.count + add.count + update.count }

    /// True when the client already has exactly the target.
    public var isEmpty: Bool { count == 0 }

    /// Computes the difference; the previous result is replaced.
    /// - Parameters:
    ///   - client: what the client has.
    ///   - target: what it should have; a repeated id counts once (its first occurrence).
    /// - Complexity: O(client + target), plus sorting the removed ids; no allocation once the buffers
    ///   have grown.
    public mutating func compute(from client: ClientFeatureSet, to target: some Collection<Feature>) {
        remove.removeAll(keepingCapacity: true)
        add.removeAll(keepingCapacity: true)
        update.removeAll(keepingCapacity: true)
        added.removeAll(keepingCapacity: true)
        seen.removeAll(keepingCapacity: true)
        seen.append(contentsOf: repeatElement(false, count: client.count))
        for f in target {
            if let slot = client.slot(of: f.id) {
                guard !seen[slot] else { continue }
                seen[slot] = true
                if client.version(atSlot: slot) != f.version(client.encoding) { update.append(f) }
            } else if added.insert(f.id).inserted {
                add.append(f)
            }
        }
        client.ids.withUnsafeBufferPointer { ids in
            for slot in 0..<ids.count where !seen[slot] { remove.append(ids[slot]) }
        }
        // Slot order depends on history; sorted removes keep batches reproducible.
        remove.sort()
    }

    /// Takes a moved view's difference as it was read (``Clusterer/viewMoved(from:zoom:to:zoom:entering:leaving:)``):
    /// the client has every leaving id, no entering one, and everything else of the new view in
    /// its current version. The previous result is replaced.
    public mutating func take(entering: [Feature], leaving: [FeatureID]) {
        remove.removeAll(keepingCapacity: true)
        add.removeAll(keepingCapacity: true)
        update.removeAll(keepingCapacity: true)
        add.append(contentsOf: entering)
        remove.append(contentsOf: leaving)
        remove.sort()
    }
}
