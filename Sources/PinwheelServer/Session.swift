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

    /// Runs the queued events; worker threads only.
    func run() {
        // A bounded number of rounds per turn keeps one chatty session from holding a worker.
        for _ in 0..<4 {
            let events = inbox.withLock { box -> [Event] in
                defer { box.events.removeAll(keepingCapacity: true) }
                return box.events
            }
            if events.isEmpty { break }
            for event in events { handle(event) }
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

    private func handle(_ event: Event) {
        var output = SessionOutput()
        switch event {
        case .opened:
            state.opened(output: &output)
        case .message(let bytes, let receivedAt):
            state.received(bytes, at: receivedAt, clusterers: server.clusterers, output: &output)
            server.metrics.received(type: output.receivedType, bytes: bytes.count)
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
            return
        }
        deliver(output)
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
        if let latency = output.firstBatchLatency { server.metrics.firstBatch(after: latency) }
        if let wait = output.windowWait { server.metrics.windowWait(wait) }
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

/// What one event made a session do.
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
    /// Viewport arrival → first batch handed to the transport, when this event sent a first batch;
    /// without any wait for the client's window (see `windowWait`).
    var firstBatchLatency: Duration?
    /// How long a first batch waited for this ack to free the client's window.
    var windowWait: Duration?
    /// The received message's type for the metrics ("invalid" when it could not be read).
    var receivedType = "invalid"
    /// The viewport this event started serving, for presence.
    var served: ViewportMessage?
    /// A `settings` opted in to (true) or out of (false) presence.
    var presence: Bool?

    mutating func send(_ type: String, _ bytes: [UInt8]) {
        messages.append(Message(type: type, bytes: bytes))
    }
}
