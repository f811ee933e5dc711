/// Memory a ``SessionMachine`` needs only while a turn runs: the query's features (or a moved view's
/// entering features and leaving ids), the pacer's diff, orderings and maps, and the buffer messages are
/// encoded into. Sessions are many and mostly idle, so a server keeps one per worker thread and lends
/// it to each turn (``SessionMachine/swapScratch(_:)``).
public struct PlanScratch {
    var features: [Feature] = []
    var leaving: [FeatureID] = []
    var pacer = PacerScratch()
    /// Grows to the largest message the thread encoded; each message leaves the turn as a copy of
    /// its exact bytes (``SessionActions/Message/framed``).
    var encoding = JSONWriter(capacity: 0)
    /// The same for `pinwheel.v1+bin` sessions' batches and expansions.
    var binaryEncoding = BinaryWriter(capacity: 0)

    public init() {}
}
