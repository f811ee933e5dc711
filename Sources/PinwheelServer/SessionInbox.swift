/// A session's waiting events and its place in the workers' queues, kept under the session's lock.
///
/// Posting costs the same however many events wait: the most urgent queue they need is kept as they
/// arrive, instead of read from every waiting event at each post, which on a machine short of cores
/// (where inboxes grow while sessions wait for a worker) made each post slower the longer the wait.
struct SessionInbox {
    /// The events the next turn takes, in order.
    private(set) var events: [Session.Event] = []
    /// The array the last turn took its events in, emptied: the next turn's take leaves it here
    /// for arrivals, so no turn allocates one.
    var spareEvents: [Session.Event] = []
    /// True while a worker runs the session's turn.
    var running = false
    /// The most urgent of the workers' queues the session waits in. A stale entry in another (its
    /// events taken by a turn started from this one) finds nothing to do.
    var queued: Workers.Priority?
    /// Set by a turn's end, from ``SessionActions/acknowledgementsCanWait``; false while a turn runs.
    var acksCanWait = false
    /// How long the last turn took: a long one runs the next on a worker (``ServiceThreadTurns``).
    var lastTurn: Duration = .zero
    /// The most urgent queue the waiting events need; nil when none waits.
    private(set) var needed: Workers.Priority?
    /// Whether a `dataChanged` waits: a second one before the turn adds nothing, since the turn takes
    /// up the newest index at the first and refreshes the view once at its end.
    private var dataChangedWaits = false

    /// Adds an event for the next turn; a `dataChanged` only when none waits yet.
    mutating func append(_ event: Session.Event) {
        if case .dataChanged = event {
            if dataChangedWaits { return }
            dataChangedWaits = true
        }
        events.append(event)
        let priority = event.priority
        if let needed, needed <= priority { return }
        needed = priority
    }

    /// The waiting events, leaving the spare array in their place.
    mutating func takeEvents() -> [Session.Event] {
        let taken = events
        events = spareEvents
        spareEvents = []
        needed = nil
        dataChangedWaits = false
        return taken
    }

    /// Marks the session queued for its waiting events; the queue it must be submitted to, or nil
    /// when it already waits in one at least as urgent (or runs).
    mutating func enqueue() -> Workers.Priority? {
        guard !running, let needed else { return nil }
        if let queued, queued <= needed { return nil }
        queued = needed
        return needed
    }
}
