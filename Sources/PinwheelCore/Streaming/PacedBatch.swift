/// One batch the pacer hands to the server to send: a slice of the difference for one viewport.
public struct PacedBatch: Equatable, Sendable {
    /// The viewport it serves.
    public var seq: UInt64
    /// Counts up over the whole session; the client's `ack` names it.
    public var number: UInt64
    /// Ids the client must remove (applied first), from the highest slot down (see ``removeSlots``).
    public var remove: [FeatureID]
    /// Where each of `remove` sits among what the client holds before the batch (the dense slots of
    /// ``ClientFeatureSet``), descending: how `pinwheel.v1+bin` names removals.
    public var removeSlots: [UInt32] = []
    /// How many features the client holds before the batch.
    public var held = 0
    /// Features the client must add.
    public var add: [Feature]
    /// Features the client has whose count or position changed.
    public var update: [Feature]
    /// True on the last batch for this viewport.
    public var done: Bool

    public init(
        seq: UInt64, number: UInt64, remove: [FeatureID] = [], add: [Feature] = [], update: [Feature] = [],
        done: Bool = false
    ) {
        self.seq = seq
        self.number = number
        self.remove = remove
        self.add = add
        self.update = update
        self.done = done
    }

    /// Markers the client applies for this batch.
    public var markerCount: Int { remove.count + add.count + update.count }
}
