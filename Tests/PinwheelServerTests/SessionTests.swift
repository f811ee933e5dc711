import Foundation
import Logging
import PinwheelCore
import PinwheelTransport
import Synchronization
import Testing

@testable import PinwheelServer

/// A host for sessions with no socket and no thread of its own: what a session sends is recorded,
/// queued turns run when the test says, and timers are kept until the test rings them.
final class InMemoryHost: SessionHost, @unchecked Sendable {
    struct State {
        var sent: [(type: String, payload: [UInt8])] = []
        var queued: [Session] = []
        var wakes: [(session: Session, at: ContinuousClock.Instant)] = []
        var cancelledWakes = 0
        var firstBatches = 0
        /// The transport refuses every message, as for a connection closed for not reading.
        var refusing = false
    }

    let metrics = ServerMetrics()
    let presence = PresenceBoard()
    let logger = Logger(label: "pinwheel-session-test")
    let clusterers: Clusterers
    let dataset: LoadedDataset
    let configuration: ServerConfiguration
    let filters: FilterRegistry
    let state = Mutex(State())

    init(points: Int, configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        // Points spread over western Europe, from a seeded generator.
        var random = SplitMix64(seed: 0x5E55_1017)
        var coordinates: [Double] = []
        for _ in 0..<points {
            coordinates.append(Double.random(in: -5...15, using: &random))
            coordinates.append(Double.random(in: 42...52, using: &random))
        }
        let data = Dataset(ids: (0..<UInt32(points)).map { $0 }, coordinates: coordinates)
        dataset = LoadedDataset(name: "test", dataset: data)
        clusterers = try Clusterers(dataset: data)
        var configuration = ServerConfiguration(webRoot: "")
        configure(&configuration)
        self.configuration = configuration
        filters = FilterRegistry(
            source: FilterRegistry.Source(
                points: { data.filtered(by: $0) }, full: { [clusterers] in clusterers.clusterer(for: $0) }, live: false,
                options: configuration.clusterOptions, aggregates: []),
            budget: configuration.filterMemory)
    }

    func sessionStart(encoding: WireEncoding) -> SessionStart {
        SessionStart(
            configuration: configuration, encoding: encoding, dataset: dataset, clusterOptions: clusterers.options)
    }

    func clusterer(for algorithm: Algorithm, filter: EffectiveFilter) throws(FilterRefusal) -> any Clusterer {
        guard !filter.isEverything else { return clusterers.clusterer(for: algorithm) }
        do {
            return try filters.clusterer(for: algorithm, filter: filter)
        } catch let refusal as FilterRefusal {
            throw refusal
        } catch {
            preconditionFailure("a filtered index failed to build: \(error)")
        }
    }

    func send(framed: [UInt8], binary: Bool, type: String, to connection: ConnectionID) -> Bool {
        state.withLock { s in
            guard !s.refusing else { return false }
            s.sent.append((type, Array(framed[WebSocketServer.headroom...])))
            return true
        }
    }

    func send(_ text: [UInt8], type: String, to connection: ConnectionID) -> Bool {
        state.withLock { s in
            guard !s.refusing else { return false }
            s.sent.append((type, text))
            return true
        }
    }

    func close(_ connection: ConnectionID, code: CloseCode, reason: String) {
        state.withLock { $0.sent.append(("close", Array("\(code.rawValue) \(reason)".utf8))) }
    }

    var viewerIdentity: ViewerIdentity? { nil }

    func schedule(_ session: Session, priority: Workers.Priority) { state.withLock { $0.queued.append(session) } }
    func runsOnServiceThread(lastTurn: Duration) -> Bool { false }
    func runOnServiceThread(_ session: Session) { Issue.record("a turn ran on the service thread") }
    func wake(_ session: Session, at deadline: ContinuousClock.Instant) {
        state.withLock { $0.wakes.append((session, deadline)) }
    }
    func cancelWakes(of session: Session) { state.withLock { $0.cancelledWakes += 1 } }
    func retire(_ index: LiveClusterIndex) {}
    func firstBatchSent(after latency: Duration) { state.withLock { $0.firstBatches += 1 } }

    /// Runs the queued turns, and those they queue, as the workers would.
    func runTurns() {
        var scratch = PlanScratch()
        while let session = state.withLock({ $0.queued.isEmpty ? nil : $0.queued.removeFirst() }) {
            session.run(scratch: &scratch)
        }
    }

    /// Rings the earliest timer a session asked for, once its time has come, and runs the turns.
    /// - Returns: false when no timer was pending.
    func ringNextWake() -> Bool {
        let next = state.withLock { s -> (Session, ContinuousClock.Instant)? in
            guard let k = s.wakes.indices.min(by: { s.wakes[$0].at < s.wakes[$1].at }) else { return nil }
            return s.wakes.remove(at: k)
        }
        guard let (session, deadline) = next else { return false }
        // The session reads the real clock: its deadline must have passed for the tick to act.
        if deadline > .now { Thread.sleep(forTimeInterval: (deadline - .now) / .seconds(1)) }
        session.alarmRang()
        runTurns()
        return true
    }

    /// The messages sent so far, decoded, and forgotten.
    func takeMessages() -> [JSON] {
        state.withLock { s in
            defer { s.sent = [] }
            return s.sent.map { JSON(any: try! JSONSerialization.jsonObject(with: Data($0.payload))) }
        }
    }
}

/// The bytes of a client message.
private func text(_ object: [String: Any]) -> [UInt8] {
    Array(try! JSONSerialization.data(withJSONObject: object))
}

@Suite("A session driven in memory through its host")
struct SessionTests {
    let connection = ConnectionID(rawValue: 7)

    @Test("opened, a session says hello with the data and the clustering options, and nothing else")
    func helloOnOpen() throws {
        let host = try InMemoryHost(points: 1000)
        let session = Session(connection: connection, host: host, encoding: .json)
        session.post(.opened)
        let messages = host.takeMessages()
        #expect(messages.isEmpty, "nothing is sent before a turn runs")
        host.runTurns()
        let hello = try #require(host.takeMessages().first)
        #expect(hello["type"].string == "hello")
        #expect(hello["session"].string == "7")
        #expect(hello["dataset"]["points"].int == 1000)
        #expect(hello["options"]["maxZoom"].int == host.clusterers.options.maxZoom)
        #expect(host.takeMessages().isEmpty)
    }

    @Test("a viewport gets batches up to the client's window; each ack lets the next one go; the view ends done")
    func viewportBatchesAndAcks() throws {
        // A window of one and a slow pace: the view takes several batches, one per ack.
        let host = try InMemoryHost(points: 20_000) {
            $0.window = 1
            $0.pace = 0.05
        }
        let session = Session(connection: connection, host: host, encoding: .json)
        session.post(.opened)
        host.runTurns()
        _ = host.takeMessages()
        session.received(text(viewport(1, [-5, 42, 15, 52], zoom: 6)), at: .now)
        host.runTurns()
        var batches = host.takeMessages()
        #expect(batches.map { $0["type"].string } == ["batch"], "one batch fills a window of one")
        #expect(host.state.withLock { $0.firstBatches } == 1)
        var view = ClientView()
        var seen = 0
        while let batch = batches.first {
            seen += 1
            view.apply(batch)
            if batch["done"].bool == true { break }
            // Nothing more comes before the ack: the window is full.
            let before = host.takeMessages()
            #expect(before.isEmpty)
            session.received(
                text(["type": "ack", "batch": batch["batch"].int!, "applied": batch["add"].array.count, "ms": 1.0]),
                at: .now)
            host.runTurns()
            batches = host.takeMessages()
            // The next batch may wait for the pacer's timer.
            while batches.isEmpty, host.ringNextWake() { batches = host.takeMessages() }
            #expect(batches.count <= 1, "more than one batch per ack with a window of one")
            if seen > 200 { break }
        }
        #expect(seen >= 2, "the view fit one batch; pick a slower pace")
        #expect(batches.first?["done"].bool == true)
        // What the client holds is what the server's clusterer has in view, nothing twice.
        #expect(view.addedIDs.count == Set(view.addedIDs).count)
        #expect(!view.features.isEmpty)
    }

    @Test("a bad message gets an error naming the problem, and the session goes on")
    func badMessageGetsError() throws {
        let host = try InMemoryHost(points: 1000)
        let session = Session(connection: connection, host: host, encoding: .json)
        session.post(.opened)
        host.runTurns()
        _ = host.takeMessages()
        session.received(text(viewport(1, [-5, 42, 15, 52], zoom: 31)), at: .now)
        host.runTurns()
        let error = try #require(host.takeMessages().first)
        #expect(error["type"].string == "error")
        #expect(error["code"].string == "invalid-field")
        #expect(error["field"].string == "zoom")
        #expect(error["message"].string?.contains("31") == true)
        session.received(text(viewport(2, [-5, 42, 15, 52], zoom: 4)), at: .now)
        host.runTurns()
        #expect(host.takeMessages().first?["type"].string == "batch")
    }

    @Test("closed, a session leaves presence, cancels its timers and sends nothing more")
    func closeEndsTheSession() throws {
        let host = try InMemoryHost(points: 1000)
        let session = Session(connection: connection, host: host, encoding: .json)
        session.post(.opened)
        session.received(text(viewport(1, [-5, 42, 15, 52], zoom: 4)), at: .now)
        host.runTurns()
        #expect(host.presence.sessionCount == 1)
        _ = host.takeMessages()
        session.post(.closed)
        session.received(text(viewport(2, [-5, 42, 15, 52], zoom: 5)), at: .now)
        host.runTurns()
        #expect(host.state.withLock { $0.cancelledWakes } == 1)
        #expect(host.presence.sessionCount == 0)
        #expect(host.takeMessages().isEmpty)
    }

    @Test("once the transport refuses a message, the session stops sending")
    func refusedSendStops() throws {
        let host = try InMemoryHost(points: 1000)
        let session = Session(connection: connection, host: host, encoding: .json)
        host.state.withLock { $0.refusing = true }
        session.post(.opened)
        host.runTurns()
        host.state.withLock { $0.refusing = false }
        session.received(text(viewport(1, [-5, 42, 15, 52], zoom: 4)), at: .now)
        host.runTurns()
        #expect(host.takeMessages().isEmpty)
    }
}
