import Foundation
import PinwheelCore
import PinwheelTestSupport
import PinwheelTransport
import Testing

@Suite("WebSocketClient on lws", .serialized)
struct LWSWebSocketClientTests {
    @Test("a refused connection is reported as a failed connect, never as open or closed")
    func refusedConnection() throws {
        // Bind and stop a server to find a port nobody listens on.
        let (probeServer, _) = try makeServer()
        let port = probeServer.port
        probeServer.stop()
        let (client, events) = try makeClient()
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(port)/")
        #expect(eventually { events.failure(id) != nil })
        #expect(!events.isOpen(id))
        #expect(events.close(id) == nil)
        #expect(client.send("x", to: id) == .notConnected)
    }

    @Test(
        "bad URLs are refused before anything is queued",
        arguments: ["http://127.0.0.1/", "ws://", "ws://host:0/", "ws://host:99999/", "ws://[::1/"])
    func badURL(url: String) throws {
        let (client, _) = try makeClient()
        defer { client.stop() }
        #expect(throws: TransportError.invalidURL(url)) { try client.connect(to: url) }
    }

    @Test("connect before start or after stop throws notRunning")
    func notRunning() throws {
        let idle = WebSocketClient()
        #expect(throws: TransportError.notRunning) { try idle.connect(to: "ws://127.0.0.1:1/") }
        let (client, _) = try makeClient()
        client.stop()
        #expect(throws: TransportError.notRunning) { try client.connect(to: "ws://127.0.0.1:1/") }
    }

    @Test("messages sent before the handshake ends go out right after it, in order, and connect time is measured")
    func sendBeforeOpen() throws {
        let (server, _) = try makeServer()
        defer { server.stop() }
        let (client, events) = try makeClient()
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
        for index in 0..<10 {
            client.send("early-\(index)", to: id)
        }
        #expect(eventually { events.messages(id).count == 10 })
        #expect(events.messages(id) == (0..<10).map { "echo:early-\($0)" })
        let connectTime = try #require(events.events.withLock { $0.opened[id]?.connectTime })
        #expect(connectTime > .zero && connectTime < .seconds(5))
    }

    @Test("an uncompressed binary message on a permessage-deflate connection reaches the lws client once")
    func uncompressedBinaryOverDeflate() throws {
        let pair = try ConnectedPair()
        defer { pair.stop() }
        // lws 4.1.6's client parser, left alone, hands such a frame to the application without end.
        let headroom = [UInt8](repeating: 0, count: WebSocketServer.headroom)
        _ = pair.server.send(framed: headroom + [1, 2, 3], binary: true, to: pair.serverID)
        pair.server.send("after", to: pair.serverID)
        #expect(eventually { pair.events.messages(pair.id) == ["after"] })
        #expect(pair.events.binaryMessages(pair.id) == [[1, 2, 3]])
    }

    @Test("large messages cross both ways intact, with and without permessage-deflate")
    func largeMessages() throws {
        for deflate in [true, false] {
            let (server, serverEvents) = try makeServer { configuration in
                configuration.maxMessageBytes = 4 << 20
                configuration.permessageDeflate = deflate
            }
            defer { server.stop() }
            let (client, events) = try makeClient { $0.permessageDeflate = deflate }
            defer { client.stop() }
            let id = try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
            // Varied text so deflate cannot shrink it to nothing.
            var generator = SplitMix64(seed: 7)
            let big = generator.letters(1 << 20)
            client.send(big, to: id)
            #expect(eventually(timeout: .seconds(20)) { events.messages(id).count == 1 })
            let received = Array((events.messages(id).first ?? "").utf8)
            let expected = Array(("echo:" + big).utf8)
            let firstDifference = zip(received, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
            // Compared by length and first difference: printing a megabyte helps nobody.
            #expect(received.count == expected.count, "deflate \(deflate)")
            #expect(firstDifference == nil, "deflate \(deflate)")
            #expect(serverEvents.events.withLock { $0.messages.first?.1.count } == 1 << 20)
        }
    }

    @Test("a client's close reaches the server with its code and reason, and the client hears its own close")
    func clientClose() throws {
        let (server, serverEvents) = try makeServer()
        defer { server.stop() }
        let (client, events) = try makeClient()
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
        #expect(eventually { events.isOpen(id) })
        client.close(id, code: .goingAway, reason: "tab closed")
        #expect(eventually { serverEvents.closedCount == 1 })
        let (code, reason) = try #require(serverEvents.events.withLock { $0.closed.values.first })
        #expect(code == .goingAway)
        #expect(reason == "tab closed")
        #expect(eventually { events.close(id)?.code == .goingAway })
    }

    @Test("stop closes the client's connections with 1000 and ends its thread")
    func clientStop() throws {
        let (server, serverEvents) = try makeServer()
        defer { server.stop() }
        let (client, _) = try makeClient()
        let ids = try (0..<3).map { _ in
            try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
        }
        #expect(eventually { serverEvents.openCount == 3 })
        client.stop()
        #expect(eventually { serverEvents.closedCount == 3 })
        #expect(serverEvents.events.withLock { $0.closed.values.allSatisfy { $0.0 == .normal } })
        #expect(client.stats.openConnections == 0)
        #expect(ids.count == 3)
    }
}

extension SplitMix64 {
    /// `count` random lowercase letters: text that deflate shrinks only to about 60 %.
    mutating func letters(_ count: Int) -> String {
        String((0..<count).map { _ in Character(UnicodeScalar(UInt8(97 + next() % 26))) })
    }
}
