import CNATS
import Foundation
import Synchronization

/// One connection to a NATS cluster and JetStream on it: the only place Pinwheel calls the NATS C
/// client. Every C failure comes back as ``ChangeLogError/nats(function:reason:)`` naming the function.
///
/// The client reconnects by itself (to any server of the cluster, forever); publishes made while it is
/// disconnected fail after their timeout. Message handlers run on the client's delivery threads, one
/// message at a time per subscription.
final class NATSConnection: @unchecked Sendable {
    /// What a subscription's handler gets: the message's data, its stream sequence (0 for a message
    /// that did not come from a stream) and its `Nats-Msg-Id` header.
    struct Message {
        var data: UnsafeRawBufferPointer
        var streamSequence: UInt64
        var id: String?
    }

    /// A handler kept at a stable address for the C client's closure pointer.
    final class Handler: @unchecked Sendable {
        let body: @Sendable (Message) -> Void
        init(_ body: @escaping @Sendable (Message) -> Void) { self.body = body }
    }

    /// Publishes waiting for JetStream's acknowledgement, by message id, oldest first: the C client's
    /// acknowledgement handler answers each, or a timer once its time is up, whichever comes first.
    final class PendingAcks: @unchecked Sendable {
        typealias Answer = @Sendable (Result<(sequence: UInt64, duplicate: Bool), ChangeLogError>) -> Void
        private let waiting = Mutex<(next: UInt64, byID: [String: [(token: UInt64, answer: Answer)]])>((0, [:]))

        /// Keeps `answer` until the publish with `id` is acknowledged.
        /// - Returns: the token that ``take(id:token:)`` finds it by.
        func add(id: String, answer: @escaping Answer) -> UInt64 {
            waiting.withLock { w in
                w.next += 1
                w.byID[id, default: []].append((w.next, answer))
                return w.next
            }
        }

        /// Takes the answer of the publish with `id` and `token` (nil: the oldest with `id`) out; nil
        /// when it was answered already.
        func take(id: String, token: UInt64?) -> Answer? {
            waiting.withLock { w in
                guard var list = w.byID[id], let k = list.firstIndex(where: { token == nil || $0.token == token })
                else { return nil }
                let answer = list.remove(at: k).answer
                w.byID[id] = list.isEmpty ? nil : list
                return answer
            }
        }
    }

    /// What the connection reports about itself: losing its server, and finding one again. It also
    /// keeps the connection's health for `/healthz` and `/metrics`.
    final class EventHandler: @unchecked Sendable {
        let body: (@Sendable (String) -> Void)?
        /// Set by ``NATSConnection/close()``: the disconnection that follows is ours, not news.
        let closing = Atomic<Bool>(false)
        /// The server connected to (or last connected to), and why the connection is unusable now
        /// (nil while connected).
        let state = Mutex<(server: String, problem: String?)>(("a NATS server", nil))
        /// Connections lost, and times the server stopped answering pings.
        let disconnects = Atomic<Int>(0)
        let unanswered = Atomic<Int>(0)
        init(_ body: (@Sendable (String) -> Void)?) { self.body = body }

        func report(_ event: String) {
            if !closing.load(ordering: .acquiring) { body?(event) }
        }

        /// Client thread: the connection was lost. A server that stopped answering first was reported
        /// so by ``notAnswering()``, and that stays the reason.
        func lost(detail: String) {
            guard !closing.load(ordering: .acquiring) else { return }
            disconnects.add(1, ordering: .relaxed)
            let problem = state.withLock { s -> String in
                if let known = s.problem { return known }
                let why = "lost nats server \(s.server)\(detail.isEmpty ? "" : " (\(detail))")"
                s.problem = why
                return why
            }
            report("\(problem); reconnecting to another server of the cluster")
        }

        /// Probe thread: the server did not answer a ping within the probe's time.
        func notAnswering() {
            guard !closing.load(ordering: .acquiring) else { return }
            let problem = state.withLock { s -> String? in
                guard s.problem == nil else { return nil }
                s.problem =
                    "nats server \(s.server) not answering (no PONG within \(NATSConnection.probeTimeout))"
                return s.problem
            }
            guard let problem else { return }
            unanswered.add(1, ordering: .relaxed)
            report(problem)
        }

        /// Probe thread: the server answered a ping, so a "not answering" it was reported with is over.
        func answering() {
            let back = state.withLock { s -> Bool in
                guard s.problem?.contains("not answering") == true else { return false }
                s.problem = nil
                return true
            }
            if back { report("nats server \(state.withLock { $0.server }) answers again") }
        }

        /// Client thread: connected again, to `server`.
        func found(_ server: String) {
            state.withLock { s in
                s.server = server
                s.problem = nil
            }
            report("reconnected to \(server)")
        }
    }

    /// How often the client pings its server, and how many pings may go unanswered before it gives
    /// the server up and moves to another (3–4 s): a server that hangs (SIGSTOP, a stuck disk, a full
    /// network queue) keeps its TCP connection open, so only an unanswered ping reveals it.
    static let pingInterval = Duration.seconds(1)
    static let maxPingsOut = 3
    /// Every half second a probe pings the server and waits this long for its PONG: a server not
    /// answering is reported within 1–1.5 s, before the client gives it up (the client's own pings
    /// say nothing until then).
    static let probeTimeout = Duration.seconds(1)

    private let connection: OpaquePointer
    private let jetStream: OpaquePointer
    /// Asynchronous publishes waiting for their acknowledgement; the C client's handler holds it
    /// unretained, and the JetStream context goes first.
    private let acks = PendingAcks()
    /// C strings, and handlers whose release no subscription's on-complete callback took over (see
    /// ``record(_:closure:)``), live as long as the connection: the client may use them until it is destroyed.
    /// (C pointers are kept as their addresses, which may cross threads.)
    private let retained = Mutex<(handlers: [Unmanaged<Handler>], strings: [Int])>(([], []))
    private let events: EventHandler
    private let subscriptions = Mutex<[Int]>([])
    private let closed = Atomic<Bool>(false)

    /// Connects to the first server of `servers` that answers.
    /// - Parameters:
    ///   - servers: `nats://host:port` URLs of the cluster (the client learns the rest from them).
    ///   - name: how this client appears in the servers' monitoring.
    ///   - requestTimeout: how long JetStream requests and publishes wait for an answer.
    ///   - events: told, on a client thread, when the connection is lost and when it is back.
    init(
        servers: [String], name: String, requestTimeout: Duration = .seconds(5),
        events: (@Sendable (String) -> Void)? = nil
    ) throws(ChangeLogError) {
        var options: OpaquePointer?
        try Self.check(natsOptions_Create(&options), "natsOptions_Create")
        defer { natsOptions_Destroy(options) }
        let urls = servers.map { strdup($0) }
        defer { for url in urls { free(url) } }
        var pointers = urls.map { UnsafePointer($0) }
        try Self.check(natsOptions_SetServers(options, &pointers, Int32(pointers.count)), "natsOptions_SetServers")
        try Self.check(natsOptions_SetName(options, name), "natsOptions_SetName")
        // Reconnect forever, quickly: a node without its log takes no changes and misses none.
        try Self.check(natsOptions_SetMaxReconnect(options, -1), "natsOptions_SetMaxReconnect")
        try Self.check(natsOptions_SetReconnectWait(options, 250), "natsOptions_SetReconnectWait")
        try Self.check(natsOptions_SetTimeout(options, 2000), "natsOptions_SetTimeout")
        // A hung server is given up within 2–3 s (the client's default: 2 minutes at 2 pings).
        try Self.check(
            natsOptions_SetPingInterval(options, Int64(Self.pingInterval.milliseconds)), "natsOptions_SetPingInterval")
        try Self.check(natsOptions_SetMaxPingsOut(options, Int32(Self.maxPingsOut)), "natsOptions_SetMaxPingsOut")
        let handler = EventHandler(events)
        // The client's own reference to the handler, released by its last callback for the connection
        // (natsClosed): it calls the others on a thread of its own, even after natsConnection_Destroy
        // has returned, so the handler cannot go with this object.
        let closure = Unmanaged.passRetained(handler).toOpaque()
        let release = { Unmanaged<EventHandler>.fromOpaque(closure).release() }
        let set = [
            (natsOptions_SetDisconnectedCB(options, natsDisconnected, closure), "natsOptions_SetDisconnectedCB"),
            (natsOptions_SetReconnectedCB(options, natsReconnected, closure), "natsOptions_SetReconnectedCB"),
            (natsOptions_SetClosedCB(options, natsClosed, closure), "natsOptions_SetClosedCB"),
        ]
        if let (status, function) = set.first(where: { $0.0 != NATS_OK }) {
            release()
            throw Self.failure(status, function)
        }
        var made: OpaquePointer?
        let connected = natsConnection_Connect(&made, options)
        guard connected == NATS_OK, let made else {
            // A connection that never came up calls nothing back.
            release()
            throw Self.failure(connected, "natsConnection_Connect")
        }
        var jsOptions = jsOptions()
        jsOptions_Init(&jsOptions)
        jsOptions.Wait = Int64(requestTimeout.milliseconds)
        jsOptions.PublishAsync.AckHandler = natsPublishAcknowledged
        jsOptions.PublishAsync.AckHandlerClosure = Unmanaged.passUnretained(acks).toOpaque()
        var context: OpaquePointer?
        let status = natsConnection_JetStream(&context, made, &jsOptions)
        guard status == NATS_OK, let context else {
            // Closing it calls natsClosed, which releases the handler.
            natsConnection_Destroy(made)
            throw Self.failure(status, "natsConnection_JetStream")
        }
        connection = made
        jetStream = context
        self.events = handler
        handler.state.withLock { $0.server = connectedURL(made) ?? $0.server }
        // The thread holds the connection only while it probes, so the connection can go meanwhile.
        let probe = Thread { [weak self] in
            func step() -> Bool {
                guard let connection = self, !connection.closed.load(ordering: .acquiring) else { return false }
                connection.probe()
                return true
            }
            while step() { Thread.sleep(forTimeInterval: 0.5) }
        }
        probe.name = "pinwheel-nats-probe"
        probe.start()
    }

    /// Probe thread: pings the server and waits for its PONG, while the client is connected.
    private func probe() {
        guard connected else { return }
        let status = natsConnection_FlushTimeout(connection, Int64(Self.probeTimeout.milliseconds))
        if status == NATS_OK {
            events.answering()
        } else if status == NATS_TIMEOUT && connected {
            events.notAnswering()
        }
    }

    /// Why the connection cannot be used now (its server stopped answering, or it is gone and the
    /// client looks for another), nil while it is connected.
    var problem: String? { events.state.withLock { $0.problem } }

    /// The server the client is connected to, or was last.
    var server: String { events.state.withLock { $0.server } }

    /// Connections lost since start, and how many of them because the server stopped answering.
    var disconnects: (all: Int, unanswered: Int) {
        (events.disconnects.load(ordering: .relaxed), events.unanswered.load(ordering: .relaxed))
    }

    /// Whether the client is connected now: a publish made while it reconnects would wait in the
    /// client's buffer and leave whenever it reconnects, long after its answer was given up.
    var connected: Bool { natsConnection_Status(connection) == NATS_CONN_STATUS_CONNECTED }

    deinit {
        close()
        jsCtx_Destroy(jetStream)
        natsConnection_Destroy(connection)
        retained.withLock { kept in
            for handler in kept.handlers { handler.release() }
            for address in kept.strings { free(UnsafeMutableRawPointer(bitPattern: address)) }
        }
    }

    /// Unsubscribes everything and closes the connection; any thread, idempotent.
    func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // Closing the connection first: unsubscribing an ordered consumer would ask JetStream to delete
        // it and wait for the answer, up to the request timeout when the servers are gone. The servers
        // delete an ephemeral consumer by themselves once nobody reads it.
        events.closing.store(true, ordering: .releasing)
        natsConnection_Close(connection)
        for address in subscriptions.withLock({ $0 }) {
            natsSubscription_Destroy(OpaquePointer(bitPattern: address))
        }
    }

    /// The servers the client knows now: those it was given and those the cluster announced.
    var knownServers: Int {
        var list: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
        var count: Int32 = 0
        guard natsConnection_GetServers(connection, &list, &count) == NATS_OK, let list else { return 0 }
        for k in 0..<Int(count) { free(list[k]) }
        free(list)
        return Int(count)
    }

    /// Largest message the server takes, in bytes.
    var maxPayload: Int { Int(natsConnection_GetMaxPayload(connection)) }

    // MARK: Core NATS

    /// Publishes on a core subject: delivered at most once to whoever listens now.
    func publish(_ subject: String, _ bytes: [UInt8]) throws(ChangeLogError) {
        let status = bytes.withUnsafeBytes { raw in
            natsConnection_Publish(connection, subject, raw.baseAddress, Int32(raw.count))
        }
        try Self.check(status, "natsConnection_Publish")
    }

    /// Calls `handler` with every message published on `subject` from now on.
    func subscribe(_ subject: String, handler: @escaping @Sendable (Message) -> Void) throws(ChangeLogError) {
        let closure = keep(handler)
        var subscription: OpaquePointer?
        try Self.check(
            natsConnection_Subscribe(&subscription, connection, subject, deliverNATSMessage, closure),
            "natsConnection_Subscribe")
        record(subscription, closure: closure)
    }

    // MARK: JetStream

    /// Makes sure stream `name` exists, capturing `subject`, stored on disk with `replicas` copies and
    /// remembering message ids for `duplicates`; an existing stream keeps its replicas, and gets
    /// `duplicates` if its window differs.
    /// - Returns: the number of replicas the stream has.
    func ensureStream(_ name: String, subject: String, replicas: Int, duplicates: Duration) throws(ChangeLogError)
        -> Int
    {
        let window = Int64(duplicates.milliseconds) * 1_000_000
        if let existing = try streamInfo(name) {
            try setDuplicateWindow(name, window)
            return existing.replicas
        }
        var config = jsStreamConfig()
        jsStreamConfig_Init(&config)
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        let status = name.withCString { cName in
            subject.withCString { cSubject in
                var subjects: [UnsafePointer<CChar>?] = [cSubject]
                return subjects.withUnsafeMutableBufferPointer { list in
                    config.Name = cName
                    config.Subjects = list.baseAddress
                    config.SubjectsLen = 1
                    config.Storage = js_FileStorage
                    config.Replicas = Int64(replicas)
                    config.Duplicates = window
                    return js_AddStream(&info, jetStream, &config, nil, &code)
                }
            }
        }
        defer { jsStreamInfo_Destroy(info) }
        // Another node may have made it between the look-up and the add.
        if status != NATS_OK, let existing = try streamInfo(name) {
            try setDuplicateWindow(name, window)
            return existing.replicas
        }
        try Self.check(status, "js_AddStream", code)
        return Int(info?.pointee.Config?.pointee.Replicas ?? Int64(replicas))
    }

    /// The stream's first and last sequences and its replicas, nil when there is no such stream.
    func streamInfo(_ name: String) throws(ChangeLogError) -> (
        firstSequence: UInt64, lastSequence: UInt64, replicas: Int
    )? {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        let status = js_GetStreamInfo(&info, jetStream, name, nil, &code)
        defer { jsStreamInfo_Destroy(info) }
        if status == NATS_NOT_FOUND { return nil }
        try Self.check(status, "js_GetStreamInfo", code)
        guard let info else { return nil }
        let state = info.pointee.State
        return (state.FirstSeq, state.LastSeq, Int(info.pointee.Config?.pointee.Replicas ?? 1))
    }

    /// The stream's description, nil when it has none (or there is no such stream).
    func streamDescription(_ name: String) throws(ChangeLogError) -> String? {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        let status = js_GetStreamInfo(&info, jetStream, name, nil, &code)
        defer { jsStreamInfo_Destroy(info) }
        if status == NATS_NOT_FOUND { return nil }
        try Self.check(status, "js_GetStreamInfo", code)
        guard let description = info?.pointee.Config?.pointee.Description else { return nil }
        return String(cString: description)
    }

    /// Sets the stream's description, keeping the rest of its configuration.
    func setStreamDescription(_ name: String, _ description: String) throws(ChangeLogError) {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        try Self.check(js_GetStreamInfo(&info, jetStream, name, nil, &code), "js_GetStreamInfo", code)
        defer { jsStreamInfo_Destroy(info) }
        guard let current = info?.pointee.Config?.pointee else {
            throw .nats(function: "js_GetStreamInfo", reason: "no configuration for stream \(name)")
        }
        var config = current
        var updated: UnsafeMutablePointer<jsStreamInfo>?
        let status = description.withCString { text in
            config.Description = text
            return js_UpdateStream(&updated, jetStream, &config, nil, &code)
        }
        jsStreamInfo_Destroy(updated)
        try Self.check(status, "js_UpdateStream", code)
    }

    /// Sets the stream's duplicate window (nanoseconds) unless it has it already, keeping the rest of
    /// its configuration.
    private func setDuplicateWindow(_ name: String, _ window: Int64) throws(ChangeLogError) {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        try Self.check(js_GetStreamInfo(&info, jetStream, name, nil, &code), "js_GetStreamInfo", code)
        defer { jsStreamInfo_Destroy(info) }
        guard var config = info?.pointee.Config?.pointee, config.Duplicates != window else { return }
        config.Duplicates = window
        var updated: UnsafeMutablePointer<jsStreamInfo>?
        let status = js_UpdateStream(&updated, jetStream, &config, nil, &code)
        jsStreamInfo_Destroy(updated)
        try Self.check(status, "js_UpdateStream", code)
    }

    /// The stream's duplicate window, nil when there is no such stream.
    func duplicateWindow(_ name: String) throws(ChangeLogError) -> Duration? {
        var info: UnsafeMutablePointer<jsStreamInfo>?
        var code = jsErrCode(0)
        let status = js_GetStreamInfo(&info, jetStream, name, nil, &code)
        defer { jsStreamInfo_Destroy(info) }
        if status == NATS_NOT_FOUND { return nil }
        try Self.check(status, "js_GetStreamInfo", code)
        return info?.pointee.Config.map { .nanoseconds($0.pointee.Duplicates) }
    }

    /// Deletes every message of the stream; its sequence numbers go on from where they were.
    func purgeStream(_ name: String) throws(ChangeLogError) {
        var code = jsErrCode(0)
        try Self.check(js_PurgeStream(jetStream, name, nil, &code), "js_PurgeStream", code)
    }

    /// Deletes the stream and everything in it.
    func deleteStream(_ name: String) throws(ChangeLogError) {
        var code = jsErrCode(0)
        try Self.check(js_DeleteStream(jetStream, name, nil, &code), "js_DeleteStream", code)
    }

    /// Publishes to a stream without waiting: `answer` gets JetStream's acknowledgement (the message
    /// is then stored on a majority of the stream's replicas) on a client thread, or the failure.
    /// - Parameters:
    ///   - id: the `Nats-Msg-Id`; JetStream stores a message with an id it saw recently only once.
    ///   - timeout: how long to wait for the acknowledgement; past it `answer` gets a failure (the
    ///     message may still be stored, and a retry with the same id is then a duplicate).
    ///   - answer: the message's stream sequence, and whether JetStream had it already (a message
    ///     with the same id within the stream's duplicate window: the sequence is then the first one's).
    func publishToStream(
        _ subject: String, _ bytes: [UInt8], id: String, timeout: Duration,
        answer: @escaping PendingAcks.Answer
    ) {
        // Kept before publishing: the acknowledgement may come back before the call returns.
        let token = acks.add(id: id, answer: answer)
        var options = jsPubOptions()
        jsPubOptions_Init(&options)
        options.MaxWait = Int64(timeout.milliseconds)
        let status = id.withCString { cID in
            options.MsgId = cID
            return bytes.withUnsafeBytes { raw in
                js_PublishAsync(jetStream, subject, raw.baseAddress, Int32(raw.count), &options)
            }
        }
        guard status == NATS_OK else {
            acks.take(id: id, token: token)?(.failure(Self.failure(status, "js_PublishAsync")))
            return
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(timeout.milliseconds)) { [acks] in
            acks.take(id: id, token: token)?(
                .failure(.nats(function: "js_PublishAsync", reason: "no acknowledgement within \(timeout)")))
        }
    }

    /// Calls `handler` with every message of the stream after `sequence`, in stream order, then with
    /// every new one: an ordered consumer, which the client re-creates from where it was after a gap
    /// or a lost server.
    func subscribeOrdered(
        stream: String, subject: String, after sequence: UInt64, heartbeat: Duration = .seconds(1),
        handler: @escaping @Sendable (Message) -> Void
    ) throws(ChangeLogError) {
        let closure = keep(handler)
        let cStream = keep(stream)
        var options = jsSubOptions()
        jsSubOptions_Init(&options)
        options.Stream = UnsafePointer(cStream)
        options.Ordered = true
        // The server sends a heartbeat when it has nothing to deliver for this long; two missed ones make
        // the client re-create the consumer. The client's default, 5 s, left a node whose consumer lived
        // on a dead NATS server without changes (and its producers without answers) for up to 20 s.
        options.Config.Heartbeat = Int64(heartbeat.milliseconds) * 1_000_000
        if sequence > 0 {
            options.Config.DeliverPolicy = js_DeliverByStartSequence
            options.Config.OptStartSeq = sequence + 1
        } else {
            options.Config.DeliverPolicy = js_DeliverAll
        }
        var subscription: OpaquePointer?
        var code = jsErrCode(0)
        let status = js_Subscribe(&subscription, jetStream, subject, deliverNATSMessage, closure, nil, &options, &code)
        try Self.check(status, "js_Subscribe", code)
        record(subscription, closure: closure)
    }

    // MARK: Helpers

    /// Records a subscription and hands its handler's release to the client's on-complete callback,
    /// which comes once the subscription is closed and the handler has returned for the last time: a
    /// delivery thread may still be running it when the subscription or the connection is destroyed.
    /// Where the client refuses (the subscription closed already), the handler stays with the others
    /// this object releases when it goes.
    private func record(_ subscription: OpaquePointer?, closure: UnsafeMutableRawPointer) {
        guard let subscription else { return }
        subscriptions.withLock { $0.append(Int(bitPattern: subscription)) }
        guard natsSubscription_SetOnCompleteCB(subscription, natsSubscriptionComplete, closure) == NATS_OK else {
            return
        }
        retained.withLock { kept in kept.handlers.removeAll { $0.toOpaque() == closure } }
    }

    private func keep(_ handler: @escaping @Sendable (Message) -> Void) -> UnsafeMutableRawPointer {
        let box = Unmanaged.passRetained(Handler(handler))
        retained.withLock { $0.handlers.append(box) }
        return box.toOpaque()
    }

    private func keep(_ string: String) -> UnsafeMutablePointer<CChar> {
        let copy = strdup(string)!
        retained.withLock { $0.strings.append(Int(bitPattern: copy)) }
        return copy
    }

    private static func check(_ status: natsStatus, _ function: String, _ code: jsErrCode = jsErrCode(0))
        throws(ChangeLogError)
    {
        guard status != NATS_OK else { return }
        throw failure(status, function, code)
    }

    private static func failure(_ status: natsStatus, _ function: String, _ code: jsErrCode = jsErrCode(0))
        -> ChangeLogError
    {
        var reason = String(cString: natsStatus_GetText(status))
        var last = NATS_OK
        if let detail = nats_GetLastError(&last), last == status {
            let text = String(cString: detail)
            if !text.isEmpty && !text.hasSuffix(reason) { reason += " (\(text))" }
        }
        if code.rawValue != 0 { reason += ", JetStream error \(code.rawValue)" }
        return .nats(function: function, reason: reason)
    }
}

/// The C client's callback when the connection to its server is lost (it then reconnects by itself).
private let natsDisconnected: natsConnectionHandler = { connection, closure in
    guard let closure else { return }
    var text: UnsafePointer<CChar>?
    let status = natsConnection_GetLastError(connection, &text)
    let detail = status == NATS_OK ? "" : text.map { String(cString: $0) } ?? ""
    Unmanaged<NATSConnection.EventHandler>.fromOpaque(closure).takeUnretainedValue().lost(detail: detail)
}

/// The URL of the server the client is connected to, nil when it is not.
private func connectedURL(_ connection: OpaquePointer?) -> String? {
    var url = [CChar](repeating: 0, count: 256)
    guard natsConnection_GetConnectedUrl(connection, &url, url.count) == NATS_OK, url[0] != 0 else { return nil }
    return String(decoding: url.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// The C client's last callback for a connection, once it is closed: it drops its reference to the
/// event handler.
private let natsClosed: natsConnectionHandler = { _, closure in
    guard let closure else { return }
    Unmanaged<NATSConnection.EventHandler>.fromOpaque(closure).release()
}

/// The C client's last callback for a subscription: its handler has returned for the last time.
private let natsSubscriptionComplete: natsOnCompleteCB = { closure in
    guard let closure else { return }
    Unmanaged<NATSConnection.Handler>.fromOpaque(closure).release()
}

/// The C client's callback when it is connected again, to whichever server answered.
private let natsReconnected: natsConnectionHandler = { connection, closure in
    guard let closure else { return }
    Unmanaged<NATSConnection.EventHandler>.fromOpaque(closure).takeUnretainedValue()
        .found(connectedURL(connection) ?? "a NATS server")
}

/// The C client's callback for each asynchronous publish's acknowledgement or failure: answers the
/// publish waiting with the message's id, then frees the message. Runs on a client thread.
private let natsPublishAcknowledged: jsPubAckHandler = { _, message, ack, failure, closure in
    defer { natsMsg_Destroy(message) }
    guard let message, let closure else { return }
    var value: UnsafePointer<CChar>?
    guard natsMsgHeader_Get(message, "Nats-Msg-Id", &value) == NATS_OK, let value else { return }
    let pending = Unmanaged<NATSConnection.PendingAcks>.fromOpaque(closure).takeUnretainedValue()
    guard let answer = pending.take(id: String(cString: value), token: nil) else { return }
    if let ack {
        answer(.success((ack.pointee.Sequence, ack.pointee.Duplicate)))
        return
    }
    var reason = "no acknowledgement"
    if let failure = failure?.pointee {
        reason = failure.ErrText.map { String(cString: $0) } ?? String(cString: natsStatus_GetText(failure.Err))
        if failure.ErrCode.rawValue != 0 { reason += ", JetStream error \(failure.ErrCode.rawValue)" }
    }
    answer(.failure(.nats(function: "js_PublishAsync", reason: reason)))
}

/// The C client's message callback for every subscription: recovers the handler from the closure
/// pointer, hands it the message, then frees the message. Runs on the client's delivery thread.
private let deliverNATSMessage: natsMsgHandler = { _, _, message, closure in
    guard let message, let closure else { return }
    defer { natsMsg_Destroy(message) }
    let handler = Unmanaged<NATSConnection.Handler>.fromOpaque(closure).takeUnretainedValue()
    var sequence: UInt64 = 0
    var meta: UnsafeMutablePointer<jsMsgMetaData>?
    if natsMsg_GetMetaData(&meta, message) == NATS_OK, let meta {
        sequence = meta.pointee.Sequence.Stream
        jsMsgMetaData_Destroy(meta)
    }
    var value: UnsafePointer<CChar>?
    let id = natsMsgHeader_Get(message, "Nats-Msg-Id", &value) == NATS_OK ? value.map { String(cString: $0) } : nil
    let length = Int(natsMsg_GetDataLength(message))
    let data = UnsafeRawBufferPointer(start: natsMsg_GetData(message), count: length)
    handler.body(NATSConnection.Message(data: data, streamSequence: sequence, id: id))
}

extension Duration {
    /// Whole milliseconds, rounded down.
    fileprivate var milliseconds: Int {
        Int(components.seconds) * 1000 + Int(components.attoseconds / 1_000_000_000_000_000)
    }
}
