import Foundation
import PinwheelTestSupport
import PinwheelTransport
import Synchronization
import Testing

@Suite("Backpressure, keepalive and many connections", .serialized)
struct LWSBackpressureTests {
    @Test(
        "a stalled reader is closed with 1008 at the cap; its queue stays under it; another client gets all"
    )
    func stalledReader() throws {
        let cap = 256 * 1024
        let (server, serverEvents) = try makeServer(echoPrefix: nil) { configuration in
            configuration.maxQueuedBytesPerConnection = cap
            configuration.closeTimeout = .seconds(1)
        }
        defer { server.stop() }
        let (client, clientEvents) = try makeClient()
        defer { client.stop() }
        let healthy = try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
        #expect(eventually { serverEvents.openCount == 1 })
        let stalledClient = try SilentRawClient(port: server.port)
        #expect(stalledClient.waitUntilOpen())
        #expect(eventually { serverEvents.openCount == 2 })
        let ids = serverEvents.events.withLock { $0.opened.map(\.id) }
        let healthyID = ids[0]
        let stalledID = ids[1]

        let message = String(repeating: "m", count: 16 * 1024)
        var sentToHealthy = 0
        var maxQueued = 0
        var stalledResult: SendResult = .queued(queuedBytes: 0)
        let deadline = ContinuousClock.now + .seconds(20)
        // Push to both until the stalled one is refused; pace the healthy one like an app watching depth.
        while ContinuousClock.now < deadline {
            stalledResult = server.send(message, to: stalledID)
            if case .queued(let queued) = stalledResult { maxQueued = max(maxQueued, queued) } else { break }
            maxQueued = max(maxQueued, server.queuedBytes(for: stalledID) ?? 0)
            if (server.queuedBytes(for: healthyID) ?? 0) < cap / 2 {
                #expect(server.send(message, to: healthyID) != .overCapacity)
                sentToHealthy += 1
            }
            Thread.sleep(forTimeInterval: 0.0005)
        }
        #expect(stalledResult == .overCapacity)
        #expect(maxQueued <= cap)
        #expect(server.send(message, to: stalledID) == .notConnected)
        // The stalled peer never answers the close: our close deadline (1 s here) or lws's 5 s wait
        // for the close acknowledgement drops it.
        let refusedAt = ContinuousClock.now
        #expect(eventually(timeout: .seconds(10)) { serverEvents.events.withLock { $0.closed[stalledID] } != nil })
        #expect(ContinuousClock.now - refusedAt < .seconds(7))
        let close = serverEvents.events.withLock { $0.closed[stalledID] }
        #expect(close?.0 == .policyViolation)
        #expect(close?.1 == "client is not reading")
        // Meanwhile the healthy client got everything, in order, and keeps getting more.
        for index in 0..<20 {
            server.send("after-\(index)", to: healthyID)
        }
        #expect(eventually { clientEvents.messages(healthy).count == sentToHealthy + 20 })
        #expect(clientEvents.messages(healthy).last == "after-19")
        #expect(server.stats.overCapacityCloses == 1)
        #expect(eventually { server.stats.queuedBytes == 0 })
        stalledClient.stop()
    }

    @Test("the application's close goes out after the messages queued before it")
    func closeAfterQueued() throws {
        let pair = try ConnectedPair()
        defer { pair.stop() }
        let (server, serverEvents, events, id, serverID) = (
            pair.server, pair.serverEvents, pair.events, pair.id, pair.serverID
        )
        for index in 0..<50 {
            server.send("m\(index)", to: serverID)
        }
        server.close(serverID, code: .policyViolation, reason: "too many messages")
        #expect(server.send("late", to: serverID) == .notConnected)
        #expect(eventually { events.close(id) != nil })
        #expect(events.messages(id) == (0..<50).map { "m\($0)" })
        #expect(events.close(id)?.code == .policyViolation)
        #expect(events.close(id)?.reason == "too many messages")
        #expect(eventually { serverEvents.events.withLock { $0.closed[serverID]?.0 } == .policyViolation })
    }

    @Test("1013 reaches Python as 1013; the lws 4.1.6 client reports codes 1012-2999 as 1002 but keeps the reason")
    func tryAgainLater() throws {
        let (server, serverEvents) = try makeServer(echoPrefix: nil)
        defer { server.stop() }
        let port = server.port
        DispatchQueue.global().async {
            _ = eventually { serverEvents.openCount == 1 }
            server.close(serverEvents.events.withLock { $0.opened[0].id }, code: .tryAgainLater, reason: "busy")
        }
        let result = try probe(url: "ws://127.0.0.1:\(port)/", waitForClose: true)
        #expect(result.closeCode == 1013)
        #expect(result.closeReason == "busy")

        let (client, events) = try makeClient()
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(port)/", subprotocol: "pinwheel.v1")
        #expect(eventually { serverEvents.openCount == 2 })
        server.close(serverEvents.events.withLock { $0.opened[1].id }, code: .tryAgainLater, reason: "busy")
        #expect(eventually { events.close(id) != nil })
        #expect(events.close(id)?.code == .protocolError)
        #expect(events.close(id)?.reason == "busy")
    }

    @Test("a client that goes silent is dropped after the keepalive hangup time")
    func keepaliveHangup() throws {
        let (server, serverEvents) = try makeServer { configuration in
            configuration.keepalive = Keepalive(pingAfter: .seconds(1), hangUpAfter: .seconds(2))
        }
        defer { server.stop() }
        let silent = try SilentRawClient(port: server.port)
        #expect(silent.waitUntilOpen())
        let opened = ContinuousClock.now
        #expect(eventually(timeout: .seconds(8)) { serverEvents.closedCount == 1 })
        let elapsed = ContinuousClock.now - opened
        #expect(elapsed >= .seconds(1))
        #expect(serverEvents.events.withLock { $0.closed.values.first?.0 } == .abnormal)
        #expect(serverEvents.events.withLock { $0.closed.values.first?.1 } == "no answer to a ping")
        silent.stop()
    }

    @Test(
        "an idle client that answers pings stays connected, pinged once per silence, on poll and on libev",
        arguments: EventLoopBackend.allCases)
    func keepalivePings(backend: EventLoopBackend) throws {
        let (server, serverEvents) = try makeServer { configuration in
            configuration.eventLoop = backend
            configuration.keepalive = Keepalive(pingAfter: .seconds(1), hangUpAfter: .seconds(2))
        }
        defer { server.stop() }
        let client = try PongingRawClient(port: server.port, seconds: 5)
        let pings = client.pingsSeen()
        // A ping about every 1.25 s (1 s of silence, then the next sweep); each pong ends the silence.
        #expect((3...5).contains(pings ?? 0), "pings seen: \(String(describing: pings))")
        #expect(eventually { serverEvents.closedCount == 1 })
        // The client hung up; the server never did.
        #expect(serverEvents.events.withLock { $0.closed.values.first?.1 } == "connection dropped")
    }

    @Test("a client that keeps talking is never pinged")
    func keepaliveTalker() throws {
        let (server, _) = try makeServer { configuration in
            configuration.keepalive = Keepalive(pingAfter: .seconds(1), hangUpAfter: .seconds(2))
        }
        defer { server.stop() }
        let client = try PongingRawClient(port: server.port, seconds: 3.5, talkEvery: 0.3)
        #expect(client.pingsSeen() == 0)
    }

    @Test(
        "200 concurrent connections each get their own echo, on poll and on libev", arguments: EventLoopBackend.allCases
    )
    func manyConnections(backend: EventLoopBackend) throws {
        let (server, serverEvents) = try makeServer { $0.eventLoop = backend }
        let (client, events) = try makeClient { $0.eventLoop = backend }
        defer { client.stop() }
        let url = "ws://127.0.0.1:\(server.port)/"
        let ids = try (0..<200).map { _ in try client.connect(to: url, subprotocol: "pinwheel.v1") }
        for id in ids {
            client.send("n\(id.rawValue)", to: id)
        }
        #expect(eventually(timeout: .seconds(20)) { ids.allSatisfy { events.messages($0).count == 1 } })
        #expect(ids.allSatisfy { events.messages($0) == ["echo:n\($0.rawValue)"] })
        #expect(serverEvents.openCount == 200)
        #expect(server.stats.openConnections == 200)
        #expect(client.stats.openConnections == 200)
        server.stop()
        #expect(serverEvents.closedCount == 200)
        #expect(eventually { ids.allSatisfy { events.close($0)?.code == .goingAway } })
    }

    @Test("sends from many threads at once all arrive, in order per sending thread")
    func concurrentSenders() throws {
        let pair = try ConnectedPair()
        defer { pair.stop() }
        let (server, events, id, serverID) = (pair.server, pair.events, pair.id, pair.serverID)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<500 {
                server.send("\(thread):\(index)", to: serverID)
            }
        }
        #expect(eventually(timeout: .seconds(10)) { events.messages(id).count == 2000 })
        let received = events.messages(id)
        for thread in 0..<4 {
            let mine = received.filter { $0.hasPrefix("\(thread):") }
            #expect(mine == (0..<500).map { "\(thread):\($0)" })
        }
    }
}
