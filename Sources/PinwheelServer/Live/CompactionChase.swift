/// Decides how long a compaction's thread lays over its new build the changes made while it built:
/// until a round leaves few, so that the index thread has little left to lay when it installs the
/// build, but only while each round's changes are clearly fewer than the last's. On a machine too
/// busy for the compaction's thread to keep up with the producers, the rounds stop shrinking and
/// chasing them would never end: the delta under the viewers' queries would grow meanwhile, and the
/// next compaction wait. The index thread then lays the rest.
struct CompactionChase {
    /// A round with fewer changes than this ends the chase.
    static let few = 256

    private var previousRound: Int?

    /// - Parameter changes: how many changes the round just laid.
    /// - Returns: whether to take another round.
    mutating func continues(after changes: Int) -> Bool {
        defer { previousRound = changes }
        if changes < Self.few { return false }
        guard let previous = previousRound else { return true }
        return changes * 4 <= previous * 3
    }
}
