import Foundation
import PinwheelCore
import PinwheelTransport
import Synchronization

/// One browser tab's WebSocket: what it has, what it wants, and how fast it can take it.
///
/// Events arrive from the lws service thread (``post(_:)``) and from timers; a worker runs them in
/// order (``run()``), one worker at a time per session, so ``SessionState`` needs no lock of its own.
final class Session: WorkerJob, @unchecked Sendable {
    enum Event {
        /// The handshake finished: send `hello`.
        case opened
        /// A complete text message, stamped when the service thread got it.
        case message([UInt8], receivedAt: ContinuousClock.Instant)
        /// A timer the session asked for fired (coalesced viewport or pacer wait).
        case tick
        /// The connection is gone.
        case closed
    }

    private struct Inbox {
        var events: [Event] = []
        /// True while the session sits in the workers' queue or runs on a worker.
        var scheduled = false
    }

    let connection: ConnectionID
    private let server: Server
    private let inbox = Mutex(Inbox())
    /// Counts messages as they arrive on the service thread, so a flood is judged by arrival time.
    private let flood = Mutex(FloodDetector(clock: ContinuousClock()))
    /// Worker-only: touched inside ``run()`` alone, which never runs on two threads at once.
    private var state: SessionState
    /// Worker-only: what this session did, logged when it ends.
    private var counters = Counters()

    struct Counters {
        var messagesIn = 0
        var errors = 0
        var messagesOut = 0
        var batches = 0
        var bytesOut = 0
    }

    init(connection: ConnectionID, server: Server) {
        self.connection = connection
        self.server = server
        let algorithm = server.configuration.algorithm
        state = SessionState(
            connection: connection, configuration: server.configuration, dataset: server.dataset,
            options: server.clusterers.options, algorithm: algorithm, clusterer: server.clusterers.clusterer(for: algorithm))
    }

    /// Counts an arriving message; `.close` when the client has flooded for long enough. Any thread.
    func recordMessage() -> FloodDetector<ContinuousClock>.Verdict {
        flood.withLock { $0.record() }
    }

    /// Queues an event and schedules the session on a worker if it is not already; any thread.
    func post(_ event: Event) {
        let schedule = inbox.withLock { box -> Bool in
            box.events.append(event)
            defer { box.scheduled = true }
            return !box.scheduled
        }
        if schedule { server.schedule(self) }
    }

    /// Runs the events queued so far as one turn, then goes to the back of the workers' queue if
    /// more arrived: each session gets one turn at a time, so none holds a worker while others wait.
    /// Worker threads only.
    func run() {
        let events = inbox.withLock { box -> [Event] in
            defer { box.events.removeAll(keepingCapacity: true) }
            return box.events
        }
        var output = SessionOutput()
        for event in events where !state.closed && output.close == nil {
            handle(event, output: &output)
        }
        if !state.closed {
            state.flush(output: &output)
            deliver(output)
        }
        let more = inbox.withLock { box -> Bool in
            if box.events.isEmpty {
                box.scheduled = false
                return false
            }
            return true
        }
        if more { server.schedule(self) }
    }

    private func handle(_ event: Event, output: inout SessionOutput) {
        switch event {
        case .opened:
            state.opened(output: &output)
        case .message(let bytes, let receivedAt):
            let type = state.received(bytes, at: receivedAt, clusterers: server.clusterers, output: &output)
            server.metrics.received(type: type, bytes: bytes.count)
            counters.messagesIn += 1
        case .tick:
            state.tick(output: &output)
        case .closed:
            state.closed = true
            // Here, after every earlier event of this session, so no later update brings it back.
            server.presence.remove(connection: connection)
            let c = counters
            server.logger.debug(
                "session \(connection) ended: \(c.messagesIn) messages in (\(c.errors) errors), \(c.messagesOut) out (\(c.batches) batches, \(c.bytesOut) bytes)")
        }
    }

    /// Carries out what the state machine decided: sends, timers, closes.
    private func deliver(_ output: SessionOutput) {
        guard !state.closed else { return }
        for message in output.messages {
            guard server.send(message.bytes, type: message.type, to: connection) else {
                // The transport refused: the connection is closing (gone or not reading).
                state.closed = true
                return
            }
            counters.messagesOut += 1
            counters.bytesOut += message.bytes.count
            if message.type == "batch" { counters.batches += 1 }
            if message.type == "error" { counters.errors += 1 }
        }
        for latency in output.firstBatchLatencies { server.metrics.firstBatch(after: latency) }
        for wait in output.windowWaits { server.metrics.windowWait(wait) }
        if let viewport = output.served {
            server.presence.update(connection: connection, bbox: viewport.bbox, zoom: viewport.zoom)
        }
        if let presence = output.presence { server.presence.watch(connection: connection, enabled: presence) }
        if let close = output.close {
            state.closed = true
            server.close(connection, code: close.code, reason: close.reason)
            return
        }
        if let deadline = output.wakeAt {
            let delay = max(.zero, deadline - .now)
            let nanos = Int(delay.nanoseconds)
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(nanos)) { [weak self] in
                self?.post(.tick)
            }
        }
    }
}

/// What one turn of events made a session do.
struct SessionOutput {
    struct Message {
        var type: String
        var bytes: [UInt8]
    }

    /// Messages to send, in order.
    var messages: [Message] = []
    /// Close the connection after sending them.
    var close: (code: CloseCode, reason: String)?
    /// Post a tick at this time.
    var wakeAt: ContinuousClock.Instant?
    /// Viewport arrival → first batch handed to the transport, for each first batch sent; without
    /// any wait for the client's window (see `windowWaits`).
    var firstBatchLatencies: [Duration] = []
    /// How long first batches waited for an ack to free the client's window.
    var windowWaits: [Duration] = []
    /// The viewport this turn started serving, for presence.
    var served: ViewportMessage?
    /// A `settings` opted in to (true) or out of (false) presence.
    var presence: Bool?

    mutating func send(_ type: String, _ bytes: [UInt8]) {
        messages.append(Message(type: type, bytes: bytes))
    }
}
