import Foundation
import PinwheelTestSupport
import PinwheelTransport
import Testing

@Suite("Transport configuration, TLS and event loops", .serialized)
struct LWSConfigurationTests {
    @Test("bad options are refused with the option's name before anything binds")
    func invalidOptions() throws {
        func refusal(_ configure: (inout WebSocketServerConfiguration) -> Void) -> TransportError? {
            var configuration = WebSocketServerConfiguration()
            configuration.port = 0
            configure(&configuration)
            do {
                try WebSocketServer(configuration: configuration).start(delegate: RecordingServerDelegate())
                return nil
            } catch {
                return error as? TransportError
            }
        }
        #expect(refusal { $0.port = 70_000 } == .invalidConfiguration(field: "port", value: "70000"))
        #expect(refusal { $0.maxMessageBytes = 0 } == .invalidConfiguration(field: "maxMessageBytes", value: "0"))
        #expect(refusal { $0.subprotocol = "a, b" } == .invalidConfiguration(field: "subprotocol", value: "a, b"))
        #expect(
            refusal { $0.routes["healthz"] = { _ in HTTPResponse(text: "") } }
                == .invalidConfiguration(field: "routes", value: "healthz"))
        #expect(
            refusal {
                $0.routes["/x"] = { _ in HTTPResponse(text: "") }
                $0.deferredRoutes["/x"] = { _, respond in respond(HTTPResponse(text: "")) }
            } == .invalidConfiguration(field: "deferredRoutes", value: "/x"))
        #expect(
            refusal { $0.staticMounts = [StaticMount(urlPath: "/", directory: "/no/such/dir")] }
                == .invalidConfiguration(field: "staticMounts.directory (no such directory)", value: "/no/such/dir"))
        #expect(
            refusal { $0.keepalive = Keepalive(pingAfter: .seconds(10), hangUpAfter: .seconds(5)) }
                == .invalidConfiguration(field: "keepalive.hangUpAfter", value: "5.0 seconds"))
    }

    @Test("a port already in use fails in lws_create_vhost, and the server can be dropped cleanly")
    func portInUse() throws {
        let (first, _) = try makeServer()
        defer { first.stop() }
        var configuration = WebSocketServerConfiguration()
        configuration.port = first.port
        let second = WebSocketServer(configuration: configuration)
        #expect {
            try second.start(delegate: RecordingServerDelegate())
        } throws: { error in
            guard case .lwsCallFailed(let function, _) = error as? TransportError else { return false }
            return function == "lws_create_vhost"
        }
        second.stop()
        // The first server is unaffected.
        #expect(
            try probe(url: "ws://127.0.0.1:\(first.port)/", sends: [.text("still")], receive: 1).received == [
                "echo:still"
            ])
    }

    @Test("start twice is refused")
    func startTwice() throws {
        let (server, delegate) = try makeServer()
        defer { server.stop() }
        #expect(throws: TransportError.alreadyStarted) { try server.start(delegate: delegate) }
    }

    @Test("TLS: wss and https work with a certificate, for our client, Python and curl")
    func tls() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pinwheel-tls-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let cert = directory.appendingPathComponent("cert.pem").path
        let key = directory.appendingPathComponent("key.pem").path
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ]
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        #expect(openssl.terminationStatus == 0)

        let (server, serverEvents) = try makeServer { configuration in
            configuration.tls = TLSFiles(certificatePath: cert, privateKeyPath: key)
            configuration.routes["/healthz"] = { _ in HTTPResponse(text: "ok\n") }
            configuration.routes["/upload"] = { _ in HTTPResponse(text: "taken\n") }
            configuration.routeGuards["/upload"] = { _ in HTTPResponse(status: 401, text: "no\n") }
        }
        defer { server.stop() }
        // Refusals over HTTP/2 carry no Connection header, which h2 forbids: curl takes them whole.
        let upload = "https://127.0.0.1:\(server.port)/upload"
        #expect(
            try curl(["-k", "--http2", "-w", "%{http_code} %{http_version}", "--data-binary", "x", upload])
                == "no\n401 2")
        #expect(
            try curl(["-k", "--http2", "-w", "%{http_code}", "-H", "Content-Length: +1", "--data-binary", "x", upload])
                == "Content-Length must be digits only, at most 15\n400")
        let (client, events) = try makeClient { $0.allowSelfSignedCertificates = true }
        defer { client.stop() }
        let id = try client.connect(
            to: "wss://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1",
            origin: "https://127.0.0.1:\(server.port)")
        client.send("secret", to: id)
        #expect(eventually { events.messages(id) == ["echo:secret"] })
        #expect(serverEvents.events.withLock { $0.opened.first?.origin } == "https://127.0.0.1:\(server.port)")
        #expect(try curl(["-k", "https://127.0.0.1:\(server.port)/healthz"]) == "ok\n")
        let python = try probe(url: "wss://127.0.0.1:\(server.port)/", sends: [.text("py")], receive: 1)
        #expect(python.received == ["echo:py"], "probe: \(python.error ?? "no error")")
        // Plain ws to a TLS port does not get through.
        let plain = try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
        #expect(eventually { events.failure(plain) != nil || events.close(plain) != nil })
        #expect(!events.isOpen(plain))
    }

    @Test("libev: a server and a client in one process, echo, then stop closes with 1001")
    func libev() throws {
        let (server, serverEvents) = try makeServer { $0.eventLoop = .libev }
        let (client, events) = try makeClient { $0.eventLoop = .libev }
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
        client.send("ev", to: id)
        #expect(eventually { events.messages(id) == ["echo:ev"] })
        let python = try probe(url: "ws://127.0.0.1:\(server.port)/", sends: [.text("py")], receive: 1)
        #expect(python.received == ["echo:py"], "probe: \(python.error ?? "no error")")
        server.stop()
        #expect(eventually { events.close(id)?.code == .goingAway })
        #expect(serverEvents.closedCount == 2)
    }

    @Test(
        "output queued on the service thread or from another thread is written before the loop polls again (libev)",
        arguments: EventLoopBackend.allCases)
    func writesBeforePolling(backend: EventLoopBackend) throws {
        let (server, _) = try makeServer { $0.eventLoop = backend }
        defer { server.stop() }
        let (client, events) = try makeClient { $0.eventLoop = backend }
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
        #expect(eventually { events.isOpen(id) })
        let before = (server: server.stats.writablesBeforePolling, client: client.stats.writablesBeforePolling)
        // The test thread queues each message (a wake of the client's loop); the server's echo is queued
        // in its delegate, on its service thread.
        for index in 0..<20 {
            client.send("m\(index)", to: id)
            #expect(eventually { events.messages(id).count == index + 1 })
        }
        #expect(events.messages(id) == (0..<20).map { "echo:m\($0)" })
        let server20 = server.stats.writablesBeforePolling - before.server
        let client20 = client.stats.writablesBeforePolling - before.client
        switch backend {
        case .libev:
            #expect(server20 == 20)
            #expect(client20 == 20)
        case .poll:
            #expect(server20 == 0)
            #expect(client20 == 0)
        }
    }
}
