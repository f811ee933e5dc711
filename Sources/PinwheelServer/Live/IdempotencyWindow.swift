/// Producers' idempotency keys remembered in memory, for a change log that does not recognise them
/// itself (the file log, on one node): a key answered within `window` is answered again with the
/// same version and not applied again. At most `capacity` keys are kept, the oldest forgotten first;
/// a restart forgets them all.
struct IdempotencyWindow {
    /// What a request with a key finds.
    enum Lookup: Equatable {
        /// A key not seen (or forgotten): the request is applied, then ``finish(_:version:at:)`` called.
        case new
        /// A request with this key is being applied now.
        case inFlight
        /// A request with this key was applied at this version.
        case done(UInt64)
    }

    let window: Duration
    let capacity: Int
    private var versions: [String: UInt64] = [:]
    private var inFlight: Set<String> = []
    /// Keys answered, oldest first, from `head` on (a queue without moving its elements).
    private var answered: [(key: String, at: ContinuousClock.Instant)] = []
    private var head = 0

    init(window: Duration, capacity: Int) {
        self.window = window
        self.capacity = capacity
    }

    /// Looks a key up at `now`, marking it in flight when it is new.
    mutating func begin(_ key: String, at now: ContinuousClock.Instant) -> Lookup {
        forget(before: now - window)
        if let version = versions[key] { return .done(version) }
        if inFlight.contains(key) { return .inFlight }
        inFlight.insert(key)
        return .new
    }

    /// The request with `key` was applied at `version` (nil: it was not, so a retry applies it).
    mutating func finish(_ key: String, version: UInt64?, at now: ContinuousClock.Instant) {
        inFlight.remove(key)
        guard let version else { return }
        versions[key] = version
        answered.append((key, now))
        while answered.count - head > capacity { drop() }
    }

    /// Keys remembered now.
    var count: Int { versions.count }

    private mutating func forget(before oldest: ContinuousClock.Instant) {
        while head < answered.count, answered[head].at < oldest { drop() }
    }

    private mutating func drop() {
        versions[answered[head].key] = nil
        head += 1
        if head > 1024 && head * 2 > answered.count {
            answered.removeFirst(head)
            head = 0
        }
    }
}
