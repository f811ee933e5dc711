/// Memory a ``SessionMachine`` needs only while a turn plans a viewport: the query's features and the
/// pacer's diff, orderings and maps. Sessions are many and mostly idle, so a server keeps one per
/// worker thread and lends it to each turn (``SessionMachine/swapScratch(_:)``).
public struct PlanScratch {
    var features: [Feature] = []
    var pacer = PacerScratch()

    public init() {}
}
