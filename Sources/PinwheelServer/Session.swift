import Foundation
import PinwheelCore
import PinwheelTransport
import Synchronization

/// One browser tab's WebSocket: what it has, what it wants, and how fast it can take it.
///
/// Events arrive from the lws service thread (``post(_:onServiceThread:)``) and from timers; a worker
/// (or the service thread itself, see ``ServiceThreadTurns``) runs them in order (``run(scratch:)``),
/// one thread at a time per session, through the core's ``SessionMachine``, and carries out what it
/// decides: this type holds no protocol logic of its own. It sees the server only through its
/// ``SessionHost``.
final class Session: WorkerJob, @unchecked Sendable {
    enum Event {
        /// The handshake finished: send `hello`.
        case opened
        /// A complete text message, stamped when the service thread got it; `mayBeAck` from
        /// ``ClientMessage/mayBeAcknowledgement(_:)``.
        case message([UInt8], receivedAt: ContinuousClock.Instant, mayBeAck: Bool)
        /// An ack the service thread decoded to let it wait for the next turn, and its size.
        case acknowledgement(AckMessage, bytes: Int, receivedAt: ContinuousClock.Instant)
        /// A timer the session asked for fired (coalesced viewport or pacer wait).
        case tick
        /// The shared clusterers now hold newer data.
        case dataChanged
        /// The connection is gone.
        case closed

        /// The workers' queue it needs: a viewer's request before the acks and timers that keep
        /// batches flowing, and those before refreshes after a data change.
        var priority: Workers.Priority {
            switch self {
            case .opened, .closed: .request
            case .message(let bytes, _, let mayBeAck):
                mayBeAck ? .flow : ClientMessage.mayBeLookup(bytes) ? .lookup : .request
            case .acknowledgement: .flow
            case .tick: .flow
            case .dataChanged: .refresh
            }
        }
    }

    let connection: ConnectionID
    let host: any SessionHost
    private let inbox = Mutex(SessionInbox())
    /// Counts messages as they arrive on the service thread, so a flood is judged by arrival time.
    private let flood = Mutex(FloodDetector(clock: ContinuousClock()))
    /// The view last served and the data version it was read at, for the index thread to skip the
    /// sessions no change reaches.
    private let served = Mutex<ServedView?>(nil)
    /// Worker-only: touched inside ``run()`` alone, which never runs on two threads at once.
    private var machine: SessionMachine<ContinuousClock>
    /// Worker-only: set once the connection is gone or the transport refused a message.
    private var closed = false
    /// Worker-only: what this session did, logged when it ends.
    private var counters = Counters()
    /// Worker-only: whether the session waits for a token, and the one it has (see `Session+Auth`).
    var gate: ViewerGate
    /// The filter whose index this session holds in the registry (everything: none).
    private var heldFilter = EffectiveFilter.everything
    /// Whether the session's views are filtered: its turns then run on the workers, since taking up a
    /// filter may build an index.
    private let filtered = Atomic<Bool>(false)

    struct Counters {
        var messagesIn = 0
        var errors = 0
        var messagesOut = 0
        var batches = 0
        var bytesOut = 0
    }

    /// - Parameter encoding: the subprotocol the client chose.
    init(connection: ConnectionID, host: any SessionHost, encoding: WireEncoding) {
        self.connection = connection
        self.host = host
        self.encoding = encoding
        let start = host.sessionStart(encoding: encoding)
        machine = Self.machine(connection: connection, start: start, scope: nil, host: host)
        takesTokens = host.viewerIdentity != nil
        if let identity = host.viewerIdentity {
            let deadline = ContinuousClock.now + identity.authDeadline
            gate = .awaiting(deadline: deadline)
            host.wake(self, at: deadline)
        } else {
            gate = .anonymous
        }
    }

    /// The subprotocol the client chose, for a machine made anew at authentication.
    let encoding: WireEncoding
    /// Whether the server verifies viewers' tokens; without, no message is scanned for `auth`.
    private let takesTokens: Bool

    /// A session's machine over the points `scope` lets through (nil: all of them), greeting with
    /// `start.dataset`.
    static func machine(
        connection: ConnectionID, start: SessionStart, scope: FilterExpression?, host: any SessionHost
    ) -> SessionMachine<ContinuousClock> {
        SessionMachine(
            clock: ContinuousClock(), options: start.options, session: String(connection.rawValue, radix: 16),
            dataset: start.dataset, clusterOptions: start.clusterOptions,
            clusterers: { [unowned host] (algorithm, filter) throws(WireError) in
                do throws(FilterRefusal) {
                    return try host.clusterer(for: algorithm, filter: filter)
                } catch {
                    throw error.wireError
                }
            }, algorithm: start.algorithm, scope: scope)
    }

    /// Serves from `fresh` from now on, handing it the planning memory this turn lent the old one.
    /// Worker-only, inside a turn.
    func replaceMachine(with fresh: SessionMachine<ContinuousClock>) {
        var fresh = fresh
        var lent = PlanScratch()
        machine.swapScratch(&lent)
        fresh.swapScratch(&lent)
        machine = fresh
    }

    /// Greets the client (`hello`). Worker-only, inside a turn.
    func greet(actions: inout SessionActions<ContinuousClock>) {
        machine.opened(actions: &actions)
    }

    /// Closes the connection with `code` and `reason` and stops serving it at once. Worker-only.
    func end(code: UInt16, reason: String) {
        host.close(connection, code: CloseCode(rawValue: code), reason: reason)
        closed = true
        host.presence.remove(connection: connection)
        host.cancelWakes(of: self)
    }

    /// Counts an arriving message; `.close` when the client has flooded for long enough. Any thread.
    func recordMessage() -> FloodDetector<ContinuousClock>.Verdict {
        flood.withLock { $0.record() }
    }

    /// A message from the client. An ack that can release nothing stays in the inbox for the session's
    /// next turn instead of waking a worker: at one batch per viewport that halves the turns a viewer
    /// costs. Service thread.
    func received(_ text: [UInt8], at receivedAt: ContinuousClock.Instant) {
        let mayBeAck = ClientMessage.mayBeAcknowledgement(text)
        let waits = inbox.withLock { box in
            guard mayBeAck, box.acksCanWait, !box.running else { return false }
            // Checked under the lock, so no turn can start meanwhile and start waiting on this ack.
            guard case .ack(let ack)? = try? ClientMessage.decode(text) else { return false }
            box.append(.acknowledgement(ack, bytes: text.count, receivedAt: receivedAt))
            return true
        }
        if !waits {
            // A filter or a token's scope may build an index, and a token's check waits for a key: not on
            // the service thread.
            let mayBuild =
                filtered.load(ordering: .relaxed) || ClientMessage.mentions(#""filter""#, in: text)
                || (takesTokens && ClientMessage.mentions(#""auth""#, in: text))
            post(.message(text, receivedAt: receivedAt, mayBeAck: mayBeAck), onServiceThread: !mayBuild)
        }
    }

    /// Queues an event and schedules the session on a worker if it is not already waiting in the
    /// queue the event needs (a running session schedules itself when its turn ends); any thread.
    /// - Parameter onServiceThread: the caller is the lws service thread, which may run a turn that
    ///   is not a refresh itself (``SessionHost/runsOnServiceThread(lastTurn:)``).
    func post(_ event: Event, onServiceThread: Bool = false) {
        let (priority, lastTurn) = inbox.withLock { box in
            box.append(event)
            return (box.enqueue(), box.lastTurn)
        }
        guard let priority else { return }
        if onServiceThread && priority != .refresh && host.runsOnServiceThread(lastTurn: lastTurn) {
            host.runOnServiceThread(self)
        } else {
            host.schedule(self, priority: priority)
        }
    }

    /// A worker's turn (see ``turn(scratch:onServiceThread:)``).
    func run(scratch: inout PlanScratch) {
        turn(scratch: &scratch, onServiceThread: false)
    }

    /// Runs the events queued so far as one turn, with the thread's planning memory lent to the
    /// machine, then goes to the back of a workers' queue if more arrived: each session gets one
    /// turn at a time, so none holds a worker while others wait. A worker thread, or the service
    /// thread when ``SessionHost/runsOnServiceThread(lastTurn:)`` allows.
    func turn(scratch: inout PlanScratch, onServiceThread: Bool) {
        let started = ContinuousClock.now
        let taken = inbox.withLock { box -> [Event]? in
            guard !box.running, !box.events.isEmpty else { return nil }
            box.running = true
            box.acksCanWait = false
            box.queued = nil
            return box.takeEvents()
        }
        guard var events = taken else { return }
        host.metrics.turn(onServiceThread: onServiceThread)
        // Held over the turn: one that takes up newer data lets go of the index it served from, and
        // freeing that index is the index thread's work, not a viewer's (see ``SessionHost/retire(_:)``).
        let servedFrom = machine.servingClusterer as? LiveClusterIndex
        machine.swapScratch(&scratch)
        var actions = SessionActions<ContinuousClock>()
        for event in events where !closed {
            handle(event, actions: &actions)
        }
        events.removeAll(keepingCapacity: true)
        if !closed {
            machine.flush(actions: &actions)
            carryOut(actions)
        }
        // Taken back before the turn ends: once `running` is false another worker may run it.
        machine.swapScratch(&scratch)
        holdFilter(closed ? .everything : machine.filter)
        if let servedFrom, machine.servingClusterer as? LiveClusterIndex !== servedFrom { host.retire(servedFrom) }
        let acksCanWait = !closed && actions.acknowledgementsCanWait
        let took = ContinuousClock.now - started
        let priority = inbox.withLock { box in
            box.spareEvents = events
            box.running = false
            box.acksCanWait = acksCanWait
            box.lastTurn = took
            return box.enqueue()
        }
        if let priority { host.schedule(self, priority: priority) }
    }

    private func handle(_ event: Event, actions: inout SessionActions<ContinuousClock>) {
        switch event {
        case .opened:
            // A session that needs a token is greeted once it has shown one.
            if case .anonymous = gate { machine.opened(actions: &actions) }
        case .message(let bytes, let receivedAt, _):
            if admits(bytes, actions: &actions) == false { return }
            let type = machine.received(bytes, at: receivedAt, actions: &actions)
            host.metrics.received(type: type, bytes: bytes.count)
            counters.messagesIn += 1
        case .acknowledgement(let ack, let bytes, let receivedAt):
            if case .awaiting = gate { return refuseUnauthenticated() }
            let type = machine.received(.ack(ack), at: receivedAt, actions: &actions)
            host.metrics.received(type: type, bytes: bytes)
            counters.messagesIn += 1
        case .tick:
            if !gateHolds() { return }
            machine.tick(actions: &actions)
        case .dataChanged:
            machine.dataChanged()
        case .closed:
            closed = true
            // Here, after every earlier event of this session, so no later update brings it back and
            // no later turn asks for a tick.
            host.presence.remove(connection: connection)
            host.cancelWakes(of: self)
            let c = counters
            host.logger.debug(
                "session \(connection) ended: \(c.messagesIn) messages in (\(c.errors) errors), \(c.messagesOut) out (\(c.batches) batches, \(c.bytesOut) bytes)"
            )
        }
    }

    /// Keeps the registry's count of the sessions using each filtered index. Worker-only.
    func holdFilter(_ filter: EffectiveFilter) {
        guard filter != heldFilter else { return }
        host.filters.acquire(filter)
        host.filters.release(heldFilter)
        heldFilter = filter
        filtered.store(!filter.isEverything, ordering: .relaxed)
    }

    /// Whether the data published at version `now` may change what this session shows (see
    /// ``ServedView/needsTelling(of:previous:now:options:)``); a session that served no view yet is
    /// told. Index thread.
    func needsTelling(
        of footprint: ChangeFootprint?, previous: UInt64, now: UInt64, options: ClusterOptions
    ) -> Bool {
        served.withLock { view in
            view?.needsTelling(of: footprint, previous: previous, now: now, options: options) ?? true
        }
    }

    /// Carries out what the state machine decided: sends, measurements, presence, timers.
    private func carryOut(_ actions: SessionActions<ContinuousClock>) {
        for message in actions.messages {
            guard host.send(framed: message.framed, binary: message.binary, type: message.type, to: connection)
            else {
                // The transport refused: the connection is closing (gone or not reading).
                closed = true
                return
            }
            counters.messagesOut += 1
            counters.bytesOut += message.payload.count
            if message.type == "batch" { counters.batches += 1 }
            if message.type == "error" { counters.errors += 1 }
        }
        for latency in actions.firstBatchLatencies { host.firstBatchSent(after: latency) }
        for wait in actions.windowWaits { host.metrics.windowWait(wait) }
        if actions.refreshed { host.metrics.viewRefreshed() }
        if let viewport = actions.served {
            host.metrics.viewportRead(asMove: actions.servedAsMove)
            let version = actions.servedVersion ?? 0
            served.withLock { $0 = ServedView(bbox: viewport.bbox, zoom: viewport.indexZoom, version: version) }
            if sharesPresence {
                host.presence.update(connection: connection, bbox: viewport.bbox, zoom: viewport.zoom)
            }
        } else if let version = actions.servedVersion {
            // A refresh: the same view, read anew.
            served.withLock { $0?.version = version }
        }
        if let presence = actions.presence {
            host.presence.watch(connection: connection, enabled: presence && sharesPresence)
        }
        if let deadline = actions.wakeAt { host.wake(self, at: deadline) }
    }
}

extension Session: AlarmTarget {
    func alarmRang() { post(.tick) }
}
