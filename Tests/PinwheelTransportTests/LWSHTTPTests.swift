import Foundation
import PinwheelTestSupport
import PinwheelTransport
import Synchronization
import Testing

@Suite("HTTP on the WebSocket port", .serialized)
struct LWSHTTPTests {
    /// A temporary web/ directory with two files.
    private func makeWebDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinwheel-web-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try "<!doctype html><title>pinwheel</title>".write(
            to: directory.appendingPathComponent("index.html"), atomically: true, encoding: .utf8)
        try "console.log('app');".write(
            to: directory.appendingPathComponent("app.js"), atomically: true, encoding: .utf8)
        return directory
    }

    private func makeHTTPServer(web: URL) throws -> WebSocketServer {
        let bigBody = (0..<20_000).map { "metric_\($0) 1\n" }.joined()
        let (server, _) = try makeServer { configuration in
            configuration.staticMounts = [
                StaticMount(urlPath: "/", directory: web.path),
                StaticMount(urlPath: "/vendor/leaflet", directory: "/usr/share/javascript/leaflet"),
            ]
            configuration.routes["/healthz"] = { _ in HTTPResponse(text: "ok\n") }
            configuration.routes["/metrics"] = { request in
                HTTPResponse(
                    contentType: "text/plain; version=0.0.4", text: request.query == "small" ? "tiny\n" : bigBody)
            }
            configuration.routes["/empty"] = { _ in HTTPResponse(status: 204, contentType: "text/plain", body: []) }
        }
        return server
    }

    @Test("static files come from web/ at / and from Debian's Leaflet at /vendor/leaflet/")
    func staticFiles() throws {
        let web = try makeWebDirectory()
        defer { try? FileManager.default.removeItem(at: web) }
        let server = try makeHTTPServer(web: web)
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        #expect(try curl([base + "/"]) == "<!doctype html><title>pinwheel</title>")
        #expect(try curl([base + "/app.js"]) == "console.log('app');")
        let leaflet = try String(contentsOfFile: "/usr/share/javascript/leaflet/leaflet.js", encoding: .utf8)
        #expect(try curl([base + "/vendor/leaflet/leaflet.js"]) == leaflet)
        let started = ContinuousClock.now
        #expect(try curl(["-o", "/dev/null", "-w", "%{http_code}", base + "/missing.html"]) == "404")
        #expect(try curl(["-o", "/dev/null", "-w", "%{http_code}", base + "/vendor/leaflet/nope.js"]) == "404")
        #expect(ContinuousClock.now - started < .seconds(2))
    }

    @Test("a deferred route answers when its completion is called, from another thread; other routes answer meanwhile")
    func deferredRouteAnswersThroughItsCompletion() throws {
        // Completions the handler has not called yet, called by the test from a thread of its own.
        let waiting = Mutex<[@Sendable (HTTPResponse) -> Void]>([])
        let (server, _) = try makeServer { configuration in
            configuration.routes["/healthz"] = { _ in HTTPResponse(text: "ok\n") }
            configuration.deferredRoutes["/later"] = { _, respond in
                waiting.withLock { $0.append(respond) }
            }
        }
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        let answers = Mutex<[String]>([])
        let count = 6
        for _ in 0..<count {
            Thread.detachNewThread {
                let answer = (try? curl(["--max-time", "30", base + "/later"])) ?? "curl failed"
                answers.withLock { $0.append(answer) }
            }
        }
        #expect(eventually(timeout: .seconds(20)) { waiting.withLock { $0.count } == count })
        // Every handler has returned; no request is answered until its completion is called.
        #expect(try curl([base + "/healthz"]) == "ok\n")
        #expect(answers.withLock { $0.isEmpty })
        let respond = waiting.withLock { $0 }
        Thread.detachNewThread {
            for (k, answer) in respond.enumerated() { answer(HTTPResponse(text: "answer \(k)\n")) }
        }
        #expect(eventually(timeout: .seconds(20)) { answers.withLock { $0.count } == count })
        #expect(Set(answers.withLock { $0 }) == Set((0..<count).map { "answer \($0)\n" }))
    }

    @Test("a slow route handler runs off the service thread: WebSocket traffic goes on while it works")
    func slowRouteDoesNotHoldTheLoop() throws {
        let (server, _) = try makeServer { configuration in
            configuration.routes["/slow"] = { _ in
                Thread.sleep(forTimeInterval: 1.5)
                return HTTPResponse(text: "done\n")
            }
        }
        defer { server.stop() }
        let (client, events) = try makeClient()
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
        #expect(eventually { events.isOpen(id) })
        let slow = Thread { _ = try? curl(["http://127.0.0.1:\(server.port)/slow"]) }
        slow.start()
        Thread.sleep(forTimeInterval: 0.2)
        let started = ContinuousClock.now
        client.send("while the route works", to: id)
        #expect(eventually(timeout: .seconds(1)) { events.messages(id).contains("echo:while the route works") })
        #expect(ContinuousClock.now - started < .seconds(1))
        #expect(try curl(["http://127.0.0.1:\(server.port)/slow"]) == "done\n")
    }

    @Test("routes answer exact paths with their status, content type and body, also over one kept-alive connection")
    func routes() throws {
        let web = try makeWebDirectory()
        defer { try? FileManager.default.removeItem(at: web) }
        let server = try makeHTTPServer(web: web)
        defer { server.stop() }
        let base = "http://127.0.0.1:\(server.port)"
        #expect(
            try curl(["-w", " %{http_code} %{content_type}", base + "/healthz"]) == "ok\n 200 text/plain; charset=utf-8"
        )
        // 20,000 lines (about 300 KB) leave in several chunks.
        let metrics = try curl([base + "/metrics"])
        #expect(metrics.count == (0..<20_000).map { "metric_\($0) 1\n" }.joined().count)
        #expect(metrics.hasSuffix("metric_19999 1\n"))
        #expect(try curl([base + "/metrics?small"]) == "tiny\n")
        #expect(try curl(["-o", "/dev/null", "-w", "%{http_code}", base + "/empty"]) == "204")
        #expect(try curl(["-o", "/dev/null", "-w", "%{http_code}", base + "/healthz/extra"]) == "404")
        // curl reuses the connection for the second URL: the transaction must complete cleanly.
        #expect(try curl([base + "/healthz", base + "/metrics?small", base + "/healthz"]) == "ok\ntiny\nok\n")
    }

    @Test("WebSocket and HTTP share the port while static mounts are present")
    func sharedPort() throws {
        let web = try makeWebDirectory()
        defer { try? FileManager.default.removeItem(at: web) }
        let server = try makeHTTPServer(web: web)
        defer { server.stop() }
        let result = try probe(url: "ws://127.0.0.1:\(server.port)/", sends: [.text("x")], receive: 1)
        #expect(result.received == ["echo:x"])
        #expect(try curl(["http://127.0.0.1:\(server.port)/healthz"]) == "ok\n")
    }

    @Test("a route guard refuses from the headers and the body is never waited for; bad requests get 400")
    func guardsAndMalformedRequests() throws {
        let (server, _) = try makeServer { configuration in
            configuration.routes["/upload"] = { request in HTTPResponse(text: "got \(request.body.count)\n") }
            configuration.routeGuards["/upload"] = { request in
                request.authorization == "Bearer yes" ? nil : HTTPResponse(status: 401, text: "no token\n")
            }
        }
        defer { server.stop() }
        let url = "http://127.0.0.1:\(server.port)/upload"
        #expect(try curl(["--data-binary", "abc", "-H", "Authorization: Bearer yes", url]) == "got 3\n")
        // 16 MB announced, nothing sent: the 401 still comes at once.
        let started = ContinuousClock.now
        let refused = try curl([
            "-w", "%{http_code}", "-H", "Content-Length: 16000000", "-H", "Expect:", "--max-time", "5",
            "--data-binary", "", url,
        ])
        #expect(refused == "no token\n401")
        #expect(ContinuousClock.now - started < .seconds(3))
        let smuggled = try curl([
            "-w", "%{http_code}", "-H", "Transfer-Encoding: chunked", "-H", "Content-Length: 3",
            "--data-binary", "abc", url,
        ])
        #expect(smuggled == "Transfer-Encoding and Content-Length together (RFC 9112, section 6.3)\n400")
        let signed = try curl(["-w", "%{http_code}", "-H", "Content-Length: +3", "--data-binary", "abc", url])
        #expect(signed == "Content-Length must be digits only, at most 15\n400")
    }

    @Test("an upgrade from a refused origin gets 403 with the reason")
    func originRefusal() throws {
        let (server, _) = try makeServer {
            $0.allowedOrigins = .checkedBy { origin, _ in origin == "http://bad" ? "bad origin" : nil }
        }
        defer { server.stop() }
        let upgrade = [
            "-H", "Connection: Upgrade", "-H", "Upgrade: websocket", "-H", "Sec-WebSocket-Version: 13",
            "-H", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "-w", "%{http_code}", "--max-time", "5",
        ]
        #expect(
            try curl(upgrade + ["-H", "Origin: http://bad", "http://127.0.0.1:\(server.port)/"]) == "bad origin\n403")
    }
}
