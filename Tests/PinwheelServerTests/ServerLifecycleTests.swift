import Foundation
import PinwheelCore
import PinwheelTestSupport
import PinwheelTransport
import Testing

@testable import PinwheelServer

@Suite("HTTP routes, backpressure and shutdown", .serialized)
struct ServerLifecycleTests {
    @Test("the page, Debian's Leaflet, /healthz and /metrics are served on the WebSocket's port")
    func httpRoutes() async throws {
        let server = try TestServer()
        let page = try await server.get("/")
        #expect(page.status == 200 && page.body.contains("<html"))
        let leaflet = try await server.get("/vendor/leaflet/leaflet.js")
        #expect(leaflet.status == 200 && leaflet.body.contains("Leaflet"))
        let health = try await server.get("/healthz")
        #expect(health.status == 200 && health.body.hasPrefix("ok"))

        let driver = try WSDriver()
        try await driver.open("a", server)
        driver.send("a", viewport(1, europe, zoom: 4))
        var view = ClientView()
        try await driver.drain("a", seq: 1, into: &view)
        let metrics = try await server.get("/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.body.contains("pinwheel_sessions 1"))
        #expect(metrics.body.contains(#"pinwheel_messages_in_total{type="viewport"} 1"#))
        #expect(metrics.body.contains(#"pinwheel_messages_out_total{type="hello"} 1"#))
        #expect(metrics.body.contains("pinwheel_batches_total \(view.batches.count)"))
        #expect(metrics.body.contains("pinwheel_viewport_first_batch_seconds_count 1"))
        #expect(metrics.body.contains(#"pinwheel_queue_depth{queue="workers"}"#))
    }

    @Test("a stalled reader is closed with 1008 while another session keeps streaming, memory bounded")
    func stalledReader() async throws {
        let cap = 256 * 1024
        let server = try TestServer { $0.maxQueuedBytes = cap }
        let driver = try WSDriver()
        try await driver.open("busy", server)
        // The stalled client never reads, and keeps asking for the spread of the largest
        // same-coordinate group: a few bytes in, kilobytes out, no pacer window in the way.
        let opened = try await driver.connect("stalled", url: server.wsURL, origin: server.origin, read: false)
        #expect(opened["event"].string == "open")
        let member = try #require(Self.largestGroupMember(TestServer.dataset.dataset))
        let request = #"{"type":"expand","id":\#(member)}"#
        var maxQueued = 0
        var rounds = 0
        var busy = ClientView()
        while rounds < 50 && server.server.transportStats.overCapacityCloses == 0 {
            for _ in 0..<200 { driver.send("stalled", text: request) }
            // Meanwhile the other session pans and is served in full every time.
            rounds += 1
            let box = rounds % 2 == 0 ? europe : europeEast
            driver.send("busy", viewport(rounds, box, zoom: 5))
            try await driver.drain("busy", seq: rounds, into: &busy)
            #expect(Set(busy.features.keys) == Set(server.coreFeatures(bbox: box, zoom: 5).keys))
            maxQueued = max(maxQueued, server.server.transportStats.queuedBytes)
        }
        #expect(server.server.transportStats.overCapacityCloses == 1, "the stalled session was never closed")
        // Its queue was dropped at the cap: the outbound queues together never held much more than that.
        #expect(maxQueued <= 2 * cap)
        #expect(server.server.transportStats.queuedBytes <= cap)
        // The busy session still streams after the close.
        driver.send("busy", viewport(rounds + 1, [100, 20, 120, 40], zoom: 5))
        try await driver.drain("busy", seq: rounds + 1, into: &busy)
        // Once the stalled client reads again it finds the close frame after what it had buffered,
        // unless the kernel reset the connection first because its last messages were still unread
        // when the server closed (then 1006; see the report).
        driver.setReading("stalled", true)
        let close = try await driver.closed("stalled", timeout: .seconds(20))
        #expect(close.code == 1008 || close.code == 1006)
        if close.code == 1008 { #expect(close.reason.contains("not reading")) }
        let deadline = ContinuousClock.now + .seconds(10)
        while server.server.sessionCount > 1 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(server.server.sessionCount == 1)
        let metrics = try await server.get("/metrics")
        #expect(metrics.body.contains(#"pinwheel_closes_total{code="1008"} 1"#))
    }

    /// The lowest id of the largest group of points sharing one coordinate.
    static func largestGroupMember(_ dataset: Dataset) -> UInt32? {
        var groups: [Coordinate: [UInt32]] = [:]
        for row in 0..<dataset.count {
            groups[Coordinate(lat: dataset.lat(row), lon: dataset.lon(row)), default: []].append(dataset.ids[row])
        }
        return groups.values.max { $0.count < $1.count }?.min()
    }

    @Test("with --tls-cert and --tls-key the page and the stream are served over https and wss")
    func tls() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pinwheel-tls-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        openssl.arguments = [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir.path + "/key.pem", "-out",
            dir.path + "/cert.pem", "-days", "2", "-subj", "/CN=localhost",
        ]
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        #expect(openssl.terminationStatus == 0)
        let server = try TestServer {
            $0.tlsCertificate = dir.path + "/cert.pem"
            $0.tlsKey = dir.path + "/key.pem"
        }
        let driver = try WSDriver()
        let url = "wss://127.0.0.1:\(server.port)/"
        let opened = try await driver.connect("a", url: url, origin: "https://127.0.0.1:\(server.port)")
        #expect(opened["event"].string == "open", "\(opened)")
        #expect(try await driver.message("a", type: "hello")["protocol"].string == "pinwheel.v1")
        driver.send("a", viewport(1, europe, zoom: 4))
        var view = ClientView()
        try await driver.drain("a", seq: 1, into: &view)
        #expect(Set(view.features.keys) == Set(server.coreFeatures(bbox: europe, zoom: 4).keys))
        let health = try await server.get("/healthz", https: true)
        #expect(health.status == 200 && health.body.hasPrefix("ok"))
        let page = try await server.get("/", https: true)
        #expect(page.status == 200 && page.body.contains("<html"))
    }

    @Test("stop closes every session with 1001")
    func stopClosesWith1001() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        try await driver.open("a", server)
        try await driver.open("b", server)
        server.server.stop()
        #expect(try await driver.closed("a").code == 1001)
        #expect(try await driver.closed("b").code == 1001)
    }

    @Test("pinwheel serve prints its URL, serves the demo and exits 0 on SIGTERM after closing with 1001")
    func serveCommandSignal() async throws {
        let binary = try #require(Self.pinwheelBinary(), "pinwheel executable not built")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--port", "0", "--log-level", "warning"]
        process.currentDirectoryURL = URL(fileURLWithPath: TestServer.repositoryRoot)
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let line = try #require(Self.readLine(out.fileHandleForReading))
        let match = try #require(line.firstMatch(of: /pinwheel listening on http:\/\/127\.0\.0\.1:(\d+)/))
        let port = Int(match.1)!
        let driver = try WSDriver()
        let opened = try await driver.connect("a", url: "ws://127.0.0.1:\(port)/", origin: "http://127.0.0.1:\(port)")
        #expect(opened["event"].string == "open")
        let hello = try await driver.message("a", type: "hello")
        // The embedded demo: the GeoNames cities and the mall shops.
        #expect(hello["dataset"]["points"].int == 144_563 + 120)
        process.terminate()
        #expect(try await driver.closed("a").code == 1001)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 0)
    }

    static func pinwheelBinary() -> String? {
        let candidates: [String?] = [
            Bundle.main.executableURL?.deletingLastPathComponent().appendingPathComponent("pinwheel").path,
            TestServer.repositoryRoot + "/.build/debug/pinwheel",
        ]
        return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func readLine(_ handle: FileHandle) -> String? {
        var bytes: [UInt8] = []
        while true {
            let byte = handle.readData(ofLength: 1)
            guard let b = byte.first else { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if b == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(b)
        }
    }
}
