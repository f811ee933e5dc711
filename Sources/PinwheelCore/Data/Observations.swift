/// The producers' observation times a ``PointTable`` holds: the newest for each point that has been
/// given one, and a tombstone for each deleted point that had one, so that a change observed earlier
/// than what the table already holds for the same key can be told apart and dropped — an older
/// upsert cannot bring a deleted point back.
///
/// Tombstones are kept for the `capacity` most recent deletes, the oldest forgotten first; the order
/// depends only on the changes applied, so every node replaying the same log keeps the same ones.
struct Observations: Sendable {
    /// Most tombstones kept.
    let capacity: Int
    /// The newest observation of each point that exists and carries one.
    private(set) var times: [PointKey: UInt64] = [:]
    /// The observation time a deleted point's key held, and the serial of its burial.
    private var tombstones: [PointKey: (observed: UInt64, serial: UInt64)] = [:]
    /// Burials oldest first, from `head` on; an entry whose serial no longer matches its key's
    /// tombstone was revived or buried again since, and is passed over.
    private var burials: [(key: PointKey, serial: UInt64)] = []
    private var head = 0
    private var serial: UInt64 = 0

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Tombstones kept now.
    var tombstoneCount: Int { tombstones.count }

    /// Burials remembered, including those passed over since: what the bookkeeping holds.
    var burialBacklog: Int { burials.count - head }

    /// The newest observation of `key`, whether the point exists or was deleted; nil when none is known.
    func newest(_ key: PointKey) -> UInt64? { times[key] ?? tombstones[key]?.observed }

    /// Whether a change to `key` observed at `observed` is older than what is known of it; a change
    /// without a time never is.
    func isStale(_ key: PointKey, observed: UInt64?) -> Bool {
        guard let observed, let newest = newest(key) else { return false }
        return observed < newest
    }

    /// `key` was created or replaced by a change that is not stale: it holds the change's time, or,
    /// when the change had none, the newest known before (a point revived without a time keeps the
    /// bar its tombstone set).
    mutating func upserted(_ key: PointKey, observed: UInt64?) {
        // No producer sends times: nothing to look up on the path every change takes.
        if observed == nil && times.isEmpty && tombstones.isEmpty { return }
        let time = observed ?? newest(key)
        tombstones[key] = nil
        if let time { times[key] = time }
    }

    /// `key` was deleted by a change that is not stale (whether or not a point had it): a tombstone
    /// keeps the change's time, or the newest known before when the change had none.
    mutating func deleted(_ key: PointKey, observed: UInt64?) {
        if observed == nil && times.isEmpty && tombstones.isEmpty { return }
        guard let time = observed ?? newest(key) else { return }
        times[key] = nil
        bury(key, time)
    }

    /// The tombstones, oldest burial first.
    var tombstonesInOrder: [(key: PointKey, observed: UInt64)] {
        burials[head...].compactMap { entry in
            guard let stone = tombstones[entry.key], stone.serial == entry.serial else { return nil }
            return (entry.key, stone.observed)
        }
    }

    /// Restores a point's time, as a snapshot holds it.
    mutating func restore(time: UInt64, of key: PointKey) { times[key] = time }

    /// Restores a tombstone, as a snapshot holds them: oldest first.
    mutating func restore(tombstone observed: UInt64, of key: PointKey) { bury(key, observed) }

    private mutating func bury(_ key: PointKey, _ observed: UInt64) {
        serial += 1
        tombstones[key] = (observed, serial)
        burials.append((key, serial))
        while tombstones.count > capacity, head < burials.count {
            let oldest = burials[head]
            head += 1
            if tombstones[oldest.key]?.serial == oldest.serial { tombstones[oldest.key] = nil }
        }
        // Keys buried again or revived leave entries behind: drop them once they outnumber the rest.
        if burials.count - head > 2 * tombstones.count + 1024 {
            burials = tombstonesInOrder.map { entry in (entry.key, tombstones[entry.key]!.serial) }
            head = 0
        }
    }
}
