/// The difference between what a client has and what it should have, in buffers reused from one
/// viewport to the next.
public struct ViewportDiff: Sendable {
    /// Ids the client has that are not in the target.
    public private(set) var remove: [FeatureID] = []
    /// Target features the client does not have, in target order.
    public private(set) var add: [Feature] = []
    /// Target features the client has in another version (moved or recounted), in target order.
    public private(set) var update: [Feature] = []
    /// Ids of the target, to find removals; kept for its capacity.
    private var targetIDs = Set<FeatureID>()

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
        targetIDs.removeAll(keepingCapacity: true)
        targetIDs.reserveCapacity(target.count)
        for f in target {
            guard targetIDs.insert(f.id).inserted else { continue }
            if let version = client.version(of: f.id) {
                if version != f.version { update.append(f) }
            } else {
                add.append(f)
            }
        }
        for id in client.entries.keys where !targetIDs.contains(id) {
            remove.append(id)
        }
        // Dictionary order is arbitrary; sorted removes keep batches reproducible.
        remove.sort()
    }
}
