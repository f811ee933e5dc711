import Foundation
import PinwheelCore
import PinwheelTestSupport
import PinwheelTransport
import Synchronization
import Testing

@Suite("WebSocketServer on lws", .serialized)
struct LWSWebSocketServerTests {
    @Test("a client asking for pinwheel.v1 gets it and a message round-trips through the delegate")
    func handshakeAndEcho() throws {
        let (server, serverEvents) = try makeServer()
        defer { server.stop() }
        let (client, events) = try makeClient()
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(server.port)/ws", subprotocol: "pinwheel.v1")
        client.send("hello", to: id)
        #expect(eventually { events.messages(id) == ["echo:hello"] })
        #expect(events.events.withLock { $0.opened[id]?.subprotocol } == "pinwheel.v1")
        let opened = try #require(serverEvents.events.withLock { $0.opened.first })
        #expect(opened.path == "/ws")
        #expect(opened.peerAddress.hasSuffix("127.0.0.1"))
        #expect(opened.origin == nil)
        #expect(server.port > 0)
    }

    @Test("a client that names no subprotocol still reaches the WebSocket protocol (pvo default)")
    func defaultProtocol() throws {
        let (server, _) = try makeServer()
        defer { server.stop() }
        let result = try probe(
            url: "ws://127.0.0.1:\(server.port)/", subprotocols: nil, sends: [.text("hi")], receive: 1)
        #expect(result.opened)
        #expect(result.received == ["echo:hi"])
        let (client, events) = try makeClient()
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(server.port)/")
        client.send("plain", to: id)
        #expect(eventually { events.messages(id) == ["echo:plain"] })
    }

    @Test("Python websockets with and without permessage-deflate round-trips text, including fragmented text")
    func pythonRoundTrip() throws {
        let (server, _) = try makeServer()
        defer { server.stop() }
        for deflate in [true, false] {
            let result = try probe(
                url: "ws://127.0.0.1:\(server.port)/", deflate: deflate,
                sends: [.text("héllo 🌍"), .fragments(["frag", "ment", "ed"]), .repeated("x", count: 60_000)],
                receive: 3)
            #expect(result.error == nil)
            #expect(result.subprotocol == "pinwheel.v1")
            #expect(
                result.received == [
                    "echo:héllo 🌍", "echo:fragmented", "echo:" + String(repeating: "x", count: 60_000),
                ])
        }
    }

    @Test("the server compresses with a 4 KiB window: an inflater of that size decodes repeats 20 kB apart")
    func compressorWindow() throws {
        let (server, serverEvents) = try makeServer(echoPrefix: nil)
        defer { server.stop() }
        var generator = SplitMix64(seed: 5)
        // Random letters, each 20,000-letter run twice: a 32 KiB window would refer 20 kB back, which an
        // inflater with a 4 KiB window rejects ("invalid distance too far back").
        let run = generator.letters(20_000)
        let messages = [run + run, String(run.prefix(3_000)) + String(run.prefix(3_000))]
        try Self.expectDelivered(messages, by: server, opened: serverEvents, inflateWindowBits: 12)
    }

    @Test(
        "a client that limits the server's window to 256 bytes or 1 KiB gets messages compressed within it",
        arguments: [8, 10])
    func limitedServerWindow(windowBits: Int) throws {
        let (server, serverEvents) = try makeServer(echoPrefix: nil)
        defer { server.stop() }
        var generator = SplitMix64(seed: 6)
        // A 3,000-letter run 16 times: each copy is a match 3,000 bytes back, out of either window.
        // Python inflates 32 KiB at a time and checks a match's distance against the window only where
        // it reaches back into an earlier stretch, so the message is longer than that.
        let run = generator.letters(3_000)
        let result = try Self.expectDelivered(
            [String(repeating: run, count: 16), "short", run], by: server, opened: serverEvents,
            inflateWindowBits: windowBits, serverWindowBits: windowBits)
        #expect(result.frames.map(\.compressed) == [true, false, true])
    }

    @Test(
        "binary messages under 4 KiB and text under 256 bytes go out uncompressed over permessage-deflate; longer ones do not"
    )
    func smallMessagesUncompressed() throws {
        let (server, serverEvents) = try makeServer(echoPrefix: nil)
        defer { server.stop() }
        // Repeated bytes, which deflate would shrink: the size alone decides.
        let small = [UInt8](repeating: 7, count: 100)
        let large = [UInt8](repeating: 7, count: 5_000)
        let (shortText, longText) = (String(repeating: "t", count: 255), String(repeating: "t", count: 256))
        Self.whenProbeReady(serverEvents) { id in
            let headroom = [UInt8](repeating: 0, count: WebSocketServer.headroom)
            _ = server.send(framed: headroom + small, binary: true, to: id)
            _ = server.send(framed: headroom + large, binary: true, to: id)
            server.send(shortText, to: id)
            server.send(longText, to: id)
        }
        let result = try probe(url: "ws://127.0.0.1:\(server.port)/", sends: [.text("ready")], receive: 4)
        #expect(result.error == nil)
        let hex = { (bytes: [UInt8]) in "binary:" + bytes.map { String(format: "%02x", $0) }.joined() }
        #expect(result.received == [hex(small), hex(large), shortText, longText])
        #expect(
            result.frames == [
                ProbeFrame(binary: true, compressed: false), ProbeFrame(binary: true, compressed: true),
                ProbeFrame(binary: false, compressed: false), ProbeFrame(binary: false, compressed: true),
            ])
    }

    @Test("a client offering context takeover is told to compress messages alone: the same text thrice arrives")
    func deflateWithoutContextTakeover() throws {
        let (server, _) = try makeServer()
        defer { server.stop() }
        // Python websockets offers no client_no_context_takeover; with a shared window its second copy
        // would be a back-reference to the first, which a decompressor freed between messages lost.
        let text = String((0..<3_000).map { _ in "abcdefghij".randomElement()! })
        let result = try probe(
            url: "ws://127.0.0.1:\(server.port)/", sends: [.text(text), .text(text), .text(text)], receive: 3)
        #expect(result.error == nil)
        #expect(result.received == Array(repeating: "echo:" + text, count: 3))
    }

    @Test("large deflated messages of up to 3 MiB reach Python intact and separate, small ones between them")
    func largeMessagesToPython() throws {
        let (server, serverEvents) = try makeServer(echoPrefix: nil) { $0.maxQueuedBytesPerConnection = 64 << 20 }
        defer { server.stop() }
        var generator = SplitMix64(seed: 3)
        // Random letters, which deflate shrinks only to about 60 %: many packets each.
        let messages = [3 << 20, 2 << 20, 5, 70_000, 1 << 20, 3].map { generator.letters($0) }
        try Self.expectDelivered(messages, by: server, opened: serverEvents)
    }

    /// Runs `send` on another thread with the first connection `opened` records, once that
    /// connection's first message arrives. The probe's reader thread decodes frames as soon as they
    /// come, so a probe that patches its decoder sends a message when done, and nothing reaches it
    /// before.
    static func whenProbeReady(_ opened: RecordingServerDelegate, send: @escaping @Sendable (ConnectionID) -> Void) {
        DispatchQueue.global().async {
            guard eventually({ opened.events.withLock { !$0.messages.isEmpty } }) else { return }
            send(opened.events.withLock { $0.messages[0].0 })
        }
    }

    /// Sends `messages` to the first connection `opened` records, from another thread, and expects
    /// the Python probe to receive exactly them.
    @discardableResult
    static func expectDelivered(
        _ messages: [String], by server: WebSocketServer, opened: RecordingServerDelegate,
        inflateWindowBits: Int? = nil, serverWindowBits: Int? = nil
    ) throws -> ProbeResult {
        whenProbeReady(opened) { id in
            for message in messages {
                server.send(message, to: id)
            }
        }
        let result = try probe(
            url: "ws://127.0.0.1:\(server.port)/", inflateWindowBits: inflateWindowBits,
            serverWindowBits: serverWindowBits, sends: [.text("ready")],
            receive: messages.count)
        #expect(result.error == nil)
        #expect(result.received.map(\.count) == messages.map(\.count))
        // Compared element by element so a failure does not print megabytes.
        #expect(zip(result.received, messages).allSatisfy { $0 == $1 })
        return result
    }

    @Test(
        "a message over maxMessageBytes closes with 1009: plain, deflated, and fragmented, on poll and on libev",
        arguments: EventLoopBackend.allCases)
    func oversizeCloses1009(backend: EventLoopBackend) throws {
        let (server, serverEvents) = try makeServer {
            $0.maxMessageBytes = 1000
            $0.eventLoop = backend
        }
        defer { server.stop() }
        let url = "ws://127.0.0.1:\(server.port)/"
        let cases: [(Bool, ProbeSend)] = [
            (false, .repeated("a", count: 1001)),
            // 2 MiB of one letter deflates to a few KB: the cap must count inflated bytes.
            (true, .repeated("a", count: 2 << 20)),
            (false, .fragments(Array(repeating: String(repeating: "b", count: 300), count: 4))),
            (true, .fragments(Array(repeating: String(repeating: "b", count: 300), count: 4))),
        ]
        for (deflate, send) in cases {
            let result = try probe(url: url, deflate: deflate, sends: [send, .text("after")], waitForClose: true)
            #expect(result.closeCode == 1009, "deflate \(deflate): \(result)")
            #expect(result.closeReason == "message exceeds 1000 bytes")
            // The workaround: nothing after the oversize message reaches the application.
            #expect(result.received.isEmpty)
        }
        // Exactly at the limit is fine.
        let atLimit = try probe(url: url, sends: [.repeated("c", count: 1000 - 5)], receive: 1)
        #expect(atLimit.received.first?.count == 1000)
        #expect(eventually { serverEvents.closedCount == 5 })
        #expect(serverEvents.events.withLock { $0.messages.allSatisfy { $0.1.count <= 1000 } })
        #expect(serverEvents.events.withLock { $0.closed.values.filter { $0.0 == .messageTooBig }.count } == 4)
    }

    @Test("a binary frame closes with 1003")
    func binaryCloses1003() throws {
        let (server, serverEvents) = try makeServer()
        defer { server.stop() }
        for deflate in [true, false] {
            let result = try probe(
                url: "ws://127.0.0.1:\(server.port)/", deflate: deflate, sends: [.binary([1, 2, 3])], waitForClose: true
            )
            #expect(result.closeCode == 1003)
            #expect(result.closeReason == "binary frames are not accepted")
        }
        #expect(eventually { serverEvents.closedCount == 2 })
        #expect(serverEvents.events.withLock { $0.messages.isEmpty })
    }

    @Test("invalid UTF-8 in a text frame closes with 1007")
    func invalidUTF8Closes1007() throws {
        let (server, serverEvents) = try makeServer()
        defer { server.stop() }
        for deflate in [true, false] {
            let result = try probe(
                url: "ws://127.0.0.1:\(server.port)/", deflate: deflate, sends: [.rawText([0x61, 0xff, 0xfe])],
                waitForClose: true)
            #expect(result.closeCode == 1007, "deflate \(deflate): \(result)")
        }
        #expect(eventually { serverEvents.closedCount == 2 })
        #expect(serverEvents.events.withLock { $0.messages.isEmpty })
    }

    @Test("a text message that ends inside a UTF-8 character closes with 1007, with permessage-deflate too")
    func truncatedUTF8Closes1007() throws {
        let (server, serverEvents) = try makeServer()
        defer { server.stop() }
        for deflate in [true, false] {
            // "aé" with the é (C3 A9) cut after its first byte.
            let result = try probe(
                url: "ws://127.0.0.1:\(server.port)/", deflate: deflate, sends: [.rawText([0x61, 0xC3])],
                waitForClose: true)
            #expect(result.closeCode == 1007, "deflate \(deflate): \(result)")
        }
        #expect(eventually { serverEvents.closedCount == 2 })
        #expect(serverEvents.events.withLock { $0.messages.isEmpty })
    }

    @Test(
        "a frame marked compressed that does not inflate closes with 1007, naming the problem, on poll and on libev",
        arguments: EventLoopBackend.allCases)
    func corruptCompressedFrameCloses1007(backend: EventLoopBackend) throws {
        let (server, serverEvents) = try makeServer { $0.eventLoop = backend }
        defer { server.stop() }
        // A raw client: the handshake with permessage-deflate, then one masked text frame with RSV1 set
        // whose payload starts with a block of the reserved type 3.
        let run = try runPython(
            #"""
            import base64, json, os, socket, sys
            conn = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            conn.settimeout(10)
            key = base64.b64encode(os.urandom(16))
            conn.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                         b"Sec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n"
                         b"Sec-WebSocket-Protocol: pinwheel.v1\r\n"
                         b"Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n")
            response = b""
            while b"\r\n\r\n" not in response:
                response += conn.recv(4096)
            head, data = response.split(b"\r\n\r\n", 1)
            payload, mask = bytes([0xFF] * 16), os.urandom(4)
            conn.sendall(bytes([0xC1, 0x80 | len(payload)]) + mask
                         + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
            while len(data) < 2 or len(data) < 2 + (data[1] & 0x7F):
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
            body = data[2:2 + (data[1] & 0x7F)]
            print(json.dumps({"deflate": b"permessage-deflate" in head, "opcode": data[0] & 0x0F,
                              "code": body[0] << 8 | body[1], "reason": body[2:].decode()}))
            """#, arguments: [String(server.port)])
        let seen = try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any]
        #expect(seen?["deflate"] as? Bool == true, "output: \(run.output)")
        #expect(seen?["opcode"] as? Int == 8)
        #expect(seen?["code"] as? Int == 1007)
        #expect(seen?["reason"] as? String == "invalid permessage-deflate data")
        #expect(eventually { serverEvents.closedCount == 1 })
        #expect(serverEvents.events.withLock { $0.messages.isEmpty })
    }

    @Test("origins: same-origin and no Origin are admitted, others refused; an allow list admits exactly its entries")
    func originChecks() throws {
        let (server, serverEvents) = try makeServer()
        defer { server.stop() }
        let url = "ws://127.0.0.1:\(server.port)/"
        #expect(try probe(url: url, origin: "http://127.0.0.1:\(server.port)").opened)
        #expect(try probe(url: url, origin: nil).opened)
        let refused = try probe(url: url, origin: "http://evil.example")
        #expect(!refused.opened)
        #expect(try !probe(url: url, origin: "http://127.0.0.1:1").opened)
        #expect(serverEvents.openCount == 2)

        let (listed, _) = try makeServer { $0.allowedOrigins = .allowList(["https://maps.example.org"]) }
        defer { listed.stop() }
        let listedURL = "ws://127.0.0.1:\(listed.port)/"
        #expect(try probe(url: listedURL, origin: "https://maps.example.org").opened)
        #expect(try !probe(url: listedURL, origin: "http://127.0.0.1:\(listed.port)").opened)

        // Our own client sends the Origin verbatim; refusal shows up as a failed connect.
        let (client, events) = try makeClient()
        defer { client.stop() }
        let good = try client.connect(to: listedURL, subprotocol: "pinwheel.v1", origin: "https://maps.example.org")
        let bad = try client.connect(to: listedURL, subprotocol: "pinwheel.v1", origin: "https://evil.example")
        #expect(eventually { events.isOpen(good) && events.failure(bad) != nil })
    }

    @Test("stop closes every connection with 1001 and a reason, and joins the service thread")
    func stopClosesAll() throws {
        let (server, serverEvents) = try makeServer()
        let (client, events) = try makeClient()
        defer { client.stop() }
        let ids = try (0..<5).map { _ in
            try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
        }
        #expect(eventually { ids.allSatisfy(events.isOpen) })
        let port = server.port
        let python = Mutex<ProbeResult?>(nil)
        let thread = Thread {
            let result = try? probe(url: "ws://127.0.0.1:\(port)/", waitForClose: true, timeout: 20)
            python.withLock { $0 = result }
        }
        thread.start()
        #expect(eventually { serverEvents.openCount == 6 })
        let started = ContinuousClock.now
        server.stop()
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(serverEvents.closedCount == 6)
        #expect(serverEvents.events.withLock { $0.closed.values.allSatisfy { $0.0 == .goingAway } })
        #expect(eventually { ids.allSatisfy { events.close($0)?.code == .goingAway } })
        #expect(events.close(ids[0])?.reason == "server shutting down")
        #expect(eventually { python.withLock { $0?.closeCode } == 1001 })
        #expect(server.send("late", to: ConnectionID(rawValue: 1)) == .notConnected)
        // A second stop finds the thread gone and returns at once.
        let again = ContinuousClock.now
        server.stop()
        #expect(ContinuousClock.now - again < .milliseconds(100))
    }

    @Test("requestStop from another thread stops the loop without a caller waiting")
    func requestStop() throws {
        let (server, serverEvents) = try makeServer()
        let (client, events) = try makeClient()
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
        #expect(eventually { events.isOpen(id) })
        DispatchQueue.global().async { server.requestStop() }
        server.waitForExit()
        #expect(serverEvents.closedCount == 1)
        #expect(eventually { events.close(id)?.code == .goingAway })
    }
}
