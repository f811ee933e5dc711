import CLibWebSockets

/// What a `WebSocketServer` and a `WebSocketClient` share: the outbound queues, the counters and the
/// service loop, and the calls that any thread makes on connections.
///
/// Not subclassable outside the transport; use it to write code that sends through either.
public class WebSocketEndpoint: @unchecked Sendable {
    // Shared with other threads, each safe on its own.
    let outboxes: Outboxes
    let counters = TransportCounters()
    let loop: ServiceLoop

    /// Lws service thread only: set once a stop began and every connection was asked to close.
    var stopping = false
    /// Lws service thread only: the wake list's array, kept between wake-ups.
    private var woken: [Outboxes.Wake] = []
    /// Lws service thread only: true while ``writeWoken(_:)`` has lws service a socket as writable.
    private(set) var writingBeforePolling = false

    init(maxQueuedBytesPerConnection: Int, eventLoop: EventLoopBackend) {
        self.outboxes = Outboxes(capacity: maxQueuedBytesPerConnection)
        self.loop = ServiceLoop(backend: eventLoop)
    }

    /// Queues a text message for `connection`; on a client connection still in its handshake it
    /// waits for the handshake. Any thread.
    /// - Parameter text: UTF-8 bytes of one message; they are copied.
    /// - Returns: `.queued` with the queue depth, `.overCapacity` if this closed the connection with 1008,
    ///   `.notConnected` if the connection is gone or closing.
    @discardableResult
    public func send(_ text: [UInt8], to connection: ConnectionID) -> SendResult {
        text.withUnsafeBytes { enqueue($0, to: connection) }
    }

    /// Bytes of room lws needs before a message's payload (`LWS_PRE`): see ``send(framed:to:)``.
    public static let headroom = Int(SHIM_LWS_PRE)

    /// Queues a message that already sits behind ``headroom`` bytes (whose contents do not matter),
    /// without copying it: what an encoder that reserved the room produced. It goes out as a text
    /// frame, or as a binary frame when `binary`. Any thread. See `send(_:to:)` for the result.
    @discardableResult
    public func send(framed buffer: [UInt8], binary: Bool = false, to connection: ConnectionID) -> SendResult {
        precondition(buffer.count >= Self.headroom, "a framed message starts with the headroom")
        let (result, wake) = outboxes.enqueue(framed: buffer, binary: binary, to: connection)
        if wake { loop.wakeForOutput() }
        return result
    }

    /// Queues a text message for `connection`. Any thread. See `send(_:to:)` for the result.
    @discardableResult
    public func send(_ text: String, to connection: ConnectionID) -> SendResult {
        var text = text
        // The pointer stays inside the closure: small strings live inline (see LWS-NOTES.md).
        return text.withUTF8 { enqueue(UnsafeRawBufferPointer($0), to: connection) }
    }

    /// Closes `connection` with `code` and `reason` after what is already queued; later sends
    /// return `.notConnected`. The delegate hears `didClose` when it is gone (a client connection
    /// closed before its handshake ended: `didFailToConnect`). Any thread.
    public func close(_ connection: ConnectionID, code: CloseCode = .normal, reason: String = "") {
        if outboxes.requestClose(connection, code: code, reason: reason, dropQueued: false) {
            loop.wakeForOutput()
        }
    }

    /// Payload bytes waiting to be written to `connection`, nil when it is unknown. Any thread.
    public func queuedBytes(for connection: ConnectionID) -> Int? {
        outboxes.queuedBytes(for: connection)
    }

    /// Counters since start. Any thread.
    public var stats: TransportStats { counters.snapshot(outboxes: outboxes) }

    /// True when the service loop may end: stopping, and no connection is left or the time for
    /// closing them ran out. Lws service thread only.
    func mayExit(connectionsLeft: Int) -> Bool {
        stopping && (connectionsLeft == 0 || loop.forceExit.load(ordering: .sequentiallyConsistent))
    }

    /// EVENT_WAIT_CANCELLED, last step: asks lws for a WRITEABLE on every connection that got output
    /// or a close since the last wake. `connection` finds an open connection's state by id. With
    /// libev the loop writes them before it polls instead (``writeWoken(_:)``).
    /// Lws service thread only.
    func wakeConnections(_ connection: (ConnectionID) -> LWSConnection?) {
        guard !loop.pollsAfterBeforePolling else { return }
        wakeListed(connection, writeNow: false)
    }

    /// Before the loop polls (libev): every connection that got output or a close since the last
    /// poll writes it now, in the WRITEABLE lws calls when asked to service its socket as writable.
    ///
    /// Waiting for the poll to report the socket writable costs two epoll_ctl calls per message
    /// (lws turns POLLOUT on, then off) and a trip round the loop. A peer that reads has a writable
    /// socket anyway; one that does not takes what fits, and lws keeps the rest and waits for
    /// POLLOUT itself, as after any write. `connection` finds an open connection's state by id.
    /// Lws service thread only, outside lws callbacks.
    func writeWoken(_ connection: (ConnectionID) -> LWSConnection?) {
        wakeListed(connection, writeNow: true)
    }

    // Asks for a WRITEABLE on each connection of the wake list; with `writeNow`, has lws give it
    // there and then, unless lws still holds part of an earlier write.
    private func wakeListed(_ connection: (ConnectionID) -> LWSConnection?, writeNow: Bool) {
        outboxes.takeWakeList(into: &woken)
        for (id, close) in woken {
            guard let connection = connection(id), let wsi = connection.wsi else { continue }
            connection.wake(wsi, close: close)
            guard writeNow && lws_partial_buffered(wsi) == 0 else { continue }
            writingBeforePolling = true
            shim_service_as_writable(wsi)
            writingBeforePolling = false
        }
    }

    /// Counts a WRITEABLE that `writeWoken` brought about. Lws service thread only, in WRITEABLE.
    func noteWritable() {
        if writingBeforePolling { counters.writablesBeforePolling.add(1, ordering: .relaxed) }
    }

    private func enqueue(_ bytes: UnsafeRawBufferPointer, to connection: ConnectionID) -> SendResult {
        let (result, wake) = outboxes.enqueue(bytes, to: connection)
        if wake { loop.wakeForOutput() }
        return result
    }
}
