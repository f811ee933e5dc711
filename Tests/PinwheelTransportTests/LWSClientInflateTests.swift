import Foundation
import PinwheelTestSupport
import PinwheelTransport
import Testing

/// A one-connection Python server: it prints its port, serves, then prints one line of JSON saying
/// what it saw.
private final class PythonServer {
    private let process = Process()
    private let output = Pipe()
    private var pending = Data()

    init(script: String, arguments: [String] = []) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script] + arguments
        process.standardOutput = output
        try process.run()
    }

    /// The next line the script prints, nil once it ended without one.
    func line() -> String? {
        while true {
            if let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<end], as: UTF8.self)
                pending.removeSubrange(...end)
                return line
            }
            let more = output.fileHandleForReading.availableData
            if more.isEmpty { return nil }
            pending.append(more)
        }
    }

    /// The report's fields, from its JSON line.
    func report() throws -> [String: Any] {
        let text = try #require(line())
        return try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

@Suite("The lws client inflating whole messages", .serialized)
struct LWSClientInflateTests {
    /// Text both sides make alike: 20,000 letters that deflate shrinks but does not erase.
    static func letters() -> String {
        let codes: [UInt8] = (0..<20_000).map { (i: Int) -> UInt8 in
            let letter: Int = (i * i + 3 * i) % 26
            return UInt8(97 + letter)
        }
        return String(decoding: codes, as: UTF8.self)
    }

    @Test("messages from Python websockets, repeated, fragmented and binary, arrive intact, each compressed on its own")
    func fromPythonWebsockets() throws {
        let server = try PythonServer(
            script: #"""
                import asyncio, json
                from websockets.asyncio.server import serve

                async def main():
                    seen = {}
                    finished = asyncio.get_running_loop().create_future()
                    text = "".join(chr(97 + (i * i + 3 * i) % 26) for i in range(20000))

                    async def handler(ws):
                        seen["offer"] = ws.request.headers.get("Sec-WebSocket-Extensions")
                        seen["answer"] = ws.response.headers.get("Sec-WebSocket-Extensions")
                        for _ in range(3):
                            await ws.send(text)
                        await ws.send([text[i:i + 5000] for i in range(0, len(text), 5000)])
                        await ws.send(bytes(range(256)) * 64)
                        await ws.send("done")
                        await ws.wait_closed()
                        finished.set_result(True)

                    async with serve(handler, "127.0.0.1", 0) as running:
                        print(running.sockets[0].getsockname()[1], flush=True)
                        await asyncio.wait_for(finished, 20)
                    print(json.dumps(seen), flush=True)

                asyncio.run(main())
                """#)
        let port = try #require(server.line())
        let (client, events) = try makeClient { $0.permessageDeflate = true }
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(port)/")
        #expect(eventually(timeout: .seconds(10)) { events.messages(id).last == "done" })
        let text = Self.letters()
        // Three alike in a row would be back-references to each other with context takeover.
        #expect(events.messages(id) == [text, text, text, text, "done"])
        #expect(events.binaryMessages(id) == [Array((0..<64).flatMap { _ in (0...255).map(UInt8.init) })])
        client.close(id)
        let report = try server.report()
        let offer = try #require(report["offer"] as? String)
        let answer = try #require(report["answer"] as? String)
        #expect(offer.contains("permessage-deflate") && offer.contains("server_no_context_takeover"))
        #expect(answer.contains("permessage-deflate") && answer.contains("server_no_context_takeover"))
    }

    @Test("a frame marked compressed that does not inflate closes the connection with 1007, naming the problem")
    func corruptCompressedFrame() throws {
        let server = try PythonServer(
            script: #"""
                import base64, hashlib, json, socket
                listener = socket.socket()
                listener.bind(("127.0.0.1", 0))
                listener.listen(1)
                print(listener.getsockname()[1], flush=True)
                conn, _ = listener.accept()
                conn.settimeout(10)
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(4096)
                key = next(line.split(b":", 1)[1].strip() for line in request.split(b"\r\n")
                           if line.lower().startswith(b"sec-websocket-key:"))
                accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
                conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                             b"Sec-WebSocket-Accept: " + accept + b"\r\n"
                             b"Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; "
                             b"client_no_context_takeover\r\n\r\n")
                payload = bytes((i * 37 + 11) % 256 for i in range(64))
                conn.sendall(bytes([0xC1, len(payload)]) + payload)  # FIN, RSV1, text
                data = b""
                while len(data) < 2 or len(data) < 6 + (data[1] & 0x7F):
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                length, mask = data[1] & 0x7F, data[2:6]
                body = bytes(b ^ mask[i % 4] for i, b in enumerate(data[6:6 + length]))
                print(json.dumps({"opcode": data[0] & 0x0F, "code": body[0] << 8 | body[1],
                                  "reason": body[2:].decode()}), flush=True)
                """#)
        let port = try #require(server.line())
        let (client, events) = try makeClient { $0.permessageDeflate = true }
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(port)/")
        let report = try server.report()
        #expect(report["opcode"] as? Int == 8)
        #expect(report["code"] as? Int == 1007)
        #expect(report["reason"] as? String == "invalid permessage-deflate data")
        #expect(events.messages(id).isEmpty)
        #expect(eventually { events.close(id)?.code == .invalidPayload })
    }

    @Test(
        "the lws client compresses its messages itself where the server accepted deflate, and sends them as they are where it declined",
        arguments: [true, false])
    func compressesWhatItSends(serverAccepts: Bool) throws {
        let server = try PythonServer(
            script: #"""
                import asyncio, json, sys
                from websockets.asyncio.server import serve

                async def main():
                    seen = {"frames": [], "messages": []}
                    finished = asyncio.get_running_loop().create_future()

                    async def handler(ws):
                        seen["answer"] = ws.response.headers.get("Sec-WebSocket-Extensions")
                        for extension in ws.protocol.extensions:
                            def recording(frame, *rest, _decode=extension.decode, **options):
                                if frame.opcode.name in ("TEXT", "BINARY"):
                                    seen["frames"].append(frame.rsv1)
                                return _decode(frame, *rest, **options)
                            extension.decode = recording
                        for _ in range(3):
                            message = await ws.recv()
                            seen["messages"].append(message)
                        if not ws.protocol.extensions:
                            seen["frames"] = [False] * 3
                        finished.set_result(True)

                    compression = "deflate" if sys.argv[1] == "accept" else None
                    async with serve(handler, "127.0.0.1", 0, compression=compression) as running:
                        print(running.sockets[0].getsockname()[1], flush=True)
                        await asyncio.wait_for(finished, 20)
                    print(json.dumps(seen), flush=True)

                asyncio.run(main())
                """#, arguments: [serverAccepts ? "accept" : "decline"])
        let port = try #require(server.line())
        let (client, events) = try makeClient { $0.permessageDeflate = true }
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(port)/")
        #expect(eventually(timeout: .seconds(10)) { events.isOpen(id) })
        let text = Self.letters()
        for message in [text, "short", text] {
            _ = client.send(message, to: id)
        }
        let report = try server.report()
        #expect(report["messages"] as? [String] == [text, "short", text])
        // RSV1 on every message exactly where deflate was agreed: the client compresses even short
        // text, as browsers do.
        #expect(report["frames"] as? [Bool] == [serverAccepts, serverAccepts, serverAccepts])
        #expect(((report["answer"] as? String) ?? "").contains("permessage-deflate") == serverAccepts)
    }
}
