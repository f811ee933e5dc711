import Foundation
import PinwheelCore
import PinwheelTestSupport
import PinwheelTransport
import Testing

@testable import PinwheelServer

/// A box over western Europe and one shifted east by a third of its width.
let europe: [Double] = [-5, 42, 15, 52]
let europeEast: [Double] = [1.7, 42, 21.7, 52]

@Suite("Streaming over a real WebSocket", .serialized)
struct StreamingTests {
    @Test("the handshake picks pinwheel.v1 and the first message is hello")
    func handshakeAndHello() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        let opened = try await driver.connect("a", url: server.wsURL, origin: server.origin)
        #expect(opened["event"].string == "open")
        #expect(opened["subprotocol"].string == "pinwheel.v1")
        let hello = try await driver.message("a")
        #expect(hello["type"].string == "hello")
        #expect(hello["protocol"].string == "pinwheel.v1")
        #expect(hello["dataset"]["points"].int == TestServer.dataset.dataset.count)
        #expect(hello["algorithm"].string == server.server.configuration.algorithm.rawValue)
        #expect(hello["algorithms"].array.compactMap(\.string) == Algorithm.allCases.map(\.rawValue))
        #expect(hello["limits"]["window"].int == server.server.configuration.window)
        #expect(hello["limits"]["maxMessageBytes"].int == 65_536)
        #expect(hello["dataset"]["bounds"].array.count == 4)
    }

    @Test("permessage-deflate is accepted when offered, and refused when the server is told not to")
    func deflateIsAnOption() async throws {
        for deflate in [true, false] {
            let server = try TestServer { $0.permessageDeflate = deflate }
            let driver = try WSDriver()
            let open = try await driver.connect("a", url: server.wsURL, origin: server.origin)
            #expect(open["extensions"].array.compactMap(\.string) == (deflate ? ["permessage-deflate"] : []))
            let hello = try await driver.message("a", type: "hello")
            #expect(hello["session"].string != nil)
        }
    }

    @Test("a wider cluster radius is announced in hello and serves fewer, larger clusters")
    func clusterRadiusIsAnOption() async throws {
        var counts: [Double: Int] = [:]
        for radius in [40.0, 160.0] {
            let server = try TestServer { $0.clusterOptions.radius = radius }
            let driver = try WSDriver()
            let hello = try await driver.open("a", server)
            #expect(hello["options"]["radius"].double == radius)
            driver.send("a", viewport(1, europe, zoom: 5))
            var view = ClientView()
            try await driver.drain("a", seq: 1, into: &view)
            counts[radius] = view.features.count
            #expect(view.features.values.reduce(0) { $0 + $1["count"].int! } > 0)
        }
        #expect(counts[160]! > 0 && counts[160]! < counts[40]!, "\(counts)")
    }

    @Test("a viewport's batches add up to exactly the core's features for it")
    func viewportUnionEqualsCore() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        try await driver.open("a", server)
        driver.send("a", viewport(1, europe, zoom: 5))
        var view = ClientView()
        try await driver.drain("a", seq: 1, into: &view)
        let expected = server.coreFeatures(bbox: europe, zoom: 5)
        #expect(!expected.isEmpty)
        #expect(Set(view.features.keys) == Set(expected.keys))
        for (id, f) in view.features {
            let core = try #require(expected[id])
            #expect(f["count"].int == Int(core.count))
            #expect(abs(f["lat"].double! - core.lat) < 1e-6 && abs(f["lon"].double! - core.lon) < 1e-6)
        }
        #expect(view.batches.allSatisfy { $0["seq"].int == 1 })
        let numbers = view.batches.compactMap { $0["batch"].int }
        #expect(numbers == Array(numbers.sorted()) && Set(numbers).count == numbers.count)
    }

    @Test("without live data the service thread serves viewports itself while it has time, and serves them the same")
    func turnsOnTheServiceThread() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        try await driver.open("a", server)
        var view = ClientView()
        // Small views: even a debug build's turns stay short enough to run there.
        let boxes: [[Double]] = (0..<6).map { k in
            let west = 2.0 + 0.05 * Double(k)
            return [west, 48, west + 0.1, 48.1]
        }
        for (seq, box) in boxes.enumerated() {
            driver.send("a", viewport(seq + 1, box, zoom: 12))
            try await driver.drain("a", seq: seq + 1, into: &view)
        }
        #expect(Set(view.features.keys) == Set(server.coreFeatures(bbox: boxes[5], zoom: 12).keys))
        let metrics = try await server.get("/metrics").body
        // The hello's turn runs on a worker; an idle service thread runs the viewports' turns (a few may
        // go to a worker after a turn of its own ran long).
        let service = try #require(counter(metrics, #"pinwheel_turns_total{thread="service"}"#))
        let worker = try #require(counter(metrics, #"pinwheel_turns_total{thread="worker"}"#))
        #expect(service >= 2 && worker >= 1, "\(service) on the service thread, \(worker) on workers")
        // Each ack after a viewport's last batch waits in the inbox, decoded, for the next viewport's
        // turn, and counts once there; the last batch's ack is still waiting.
        let acks = try #require(counter(metrics, #"pinwheel_messages_in_total{type="ack"}"#))
        #expect(acks == view.batches.count - 1, "\(acks) acks counted of \(view.batches.count) sent")
    }

    @Test("a pan within one zoom is read as what entered and left the view, and the view ends exact")
    func pansAreReadAsMoves() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        try await driver.open("a", server)
        var view = ClientView()
        // Four pans east at zoom 6, then one view at zoom 7.
        var views: [(box: [Double], zoom: Double)] = []
        for k in 0..<5 {
            let west = -5 + 2 * Double(k)
            views.append(([west, 42, west + 20, 52], 6))
        }
        views.append(([3, 44, 13, 50], 7))
        for (seq, v) in views.enumerated() {
            driver.send("a", viewport(seq + 1, v.box, zoom: v.zoom))
            try await driver.drain("a", seq: seq + 1, into: &view)
            #expect(
                Set(view.features.keys) == Set(server.coreFeatures(bbox: v.box, zoom: v.zoom).keys),
                "view \(seq + 1)")
        }
        let metrics = try await server.get("/metrics").body
        #expect(counter(metrics, #"pinwheel_viewport_reads_total{read="moved"}"#) == 4)
        #expect(counter(metrics, #"pinwheel_viewport_reads_total{read="whole"}"#) == 2)
    }

    /// A counter's value in a `/metrics` page; nil when absent or not a whole number.
    func counter(_ metrics: String, _ series: String) -> Int? {
        metricValue(metrics, series).flatMap { Int(exactly: $0) }
    }

    @Test("a second viewport sends only the difference")
    func secondViewportSendsDifference() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        try await driver.open("a", server)
        driver.send("a", viewport(1, europe, zoom: 5))
        var view = ClientView()
        try await driver.drain("a", seq: 1, into: &view)
        let before = view.features
        view.addedIDs = []
        view.removedIDs = []
        driver.send("a", viewport(2, europeEast, zoom: 5))
        try await driver.drain("a", seq: 2, into: &view)
        let expected = server.coreFeatures(bbox: europeEast, zoom: 5)
        #expect(Set(view.features.keys) == Set(expected.keys))
        // Nothing the client kept was sent again, and only what it had was removed.
        let kept = Set(before.keys).intersection(expected.keys)
        #expect(!kept.isEmpty)
        #expect(Set(view.addedIDs).isDisjoint(with: kept))
        #expect(Set(view.removedIDs).isSubset(of: Set(before.keys)))
        #expect(view.addedIDs.count == Set(expected.keys).subtracting(before.keys).count)
    }

    @Test("a pan mid-flush cancels the unsent rest and re-diffs against what was sent")
    func panMidFlushCancels() async throws {
        // One small batch in flight at a time, so the first viewport needs many round trips.
        let server = try TestServer {
            $0.window = 1
            $0.pace = 0.01
        }
        let driver = try WSDriver()
        try await driver.open("a", server)
        driver.send("a", viewport(1, europe, zoom: 6))
        var view = ClientView()
        let first = try await driver.message("a", type: "batch")
        view.apply(first)
        #expect(first["done"].bool == false)
        let total1 = server.coreFeatures(bbox: europe, zoom: 6).count
        #expect(first["add"].array.count < total1)
        // Pan before acknowledging: the rest of viewport 1 must never be sent.
        driver.send("a", viewport(2, [100, 20, 120, 40], zoom: 6))
        try await Task.sleep(for: .milliseconds(150))
        driver.send("a", ["type": "ack", "batch": first["batch"].int!, "applied": 1, "ms": 1.0])
        try await driver.drain("a", seq: 2, into: &view)
        let seqs = view.batches.dropFirst().compactMap { $0["seq"].int }
        #expect(seqs.allSatisfy { $0 == 2 })
        let expected = server.coreFeatures(bbox: [100, 20, 120, 40], zoom: 6)
        #expect(Set(view.features.keys) == Set(expected.keys))
        // What viewport 1 sent was removed again, nothing more.
        let firstIDs = Set(first["add"].array.compactMap { $0["id"].uint64 })
        #expect(!firstIDs.isEmpty)
        #expect(Set(view.removedIDs) == firstIDs.subtracting(expected.keys))
    }

    /// Sends a message the server answers with an `error` and waits for that answer: a session answers
    /// in order, so whatever its earlier messages made it send has arrived by then.
    func roundTrip(_ driver: WSDriver, _ id: String) async throws {
        driver.send(id, ["type": "probe"])
        #expect(try await driver.message(id, type: "error")["code"].string == "unknown-type")
    }

    @Test("acks drive the pace: no more than the window is in flight")
    func acksDrivePace() async throws {
        // The same view on a server with a window of 3 is the control: its third batch arrives in
        // the time the window of 2 holds ours back, so the absence below is the window's doing.
        let server = try TestServer {
            $0.window = 2
            $0.pace = 0.2
        }
        let control = try TestServer {
            $0.window = 3
            $0.pace = 0.2
        }
        let driver = try WSDriver()
        try await driver.open("a", server)
        try await driver.open("c", control)
        driver.send("a", viewport(1, europe, zoom: 6))
        driver.send("c", viewport(1, europe, zoom: 6))
        let b1 = try await driver.message("a", type: "batch")
        let b2 = try await driver.message("a", type: "batch")
        #expect(b2["done"].bool == false, "the view fits two batches; pick a larger one or a slower pace")
        let c1 = try await driver.message("c", type: "batch")
        for _ in 0..<2 { _ = try await driver.message("c", type: "batch") }
        try await roundTrip(driver, "a")
        #expect(driver.pending("a").isEmpty, "a third batch came without an ack")
        driver.ack("a", b1)
        driver.ack("c", c1)
        let b3 = try await driver.message("a", type: "batch")
        #expect(b3["batch"].int! == b2["batch"].int! + 1)
        // Again with the control, one ack each: its window of 3 lets a fourth batch through.
        _ = try await driver.message("c", type: "batch")
        try await roundTrip(driver, "a")
        #expect(driver.pending("a").isEmpty, "more than one batch per ack")
    }

    @Test("a first batch held by the client's full window is measured as window wait, not server time")
    func windowWaitIsMeasuredApart() async throws {
        let server = try TestServer { $0.window = 1 }
        let driver = try WSDriver()
        try await driver.open("a", server)
        driver.send("a", viewport(1, europe, zoom: 6))
        let b1 = try await driver.message("a", type: "batch")
        // The window of one is full: viewport 2's first batch waits for the ack.
        driver.send("a", viewport(2, europeEast, zoom: 6))
        try await roundTrip(driver, "a")
        #expect(driver.pending("a").isEmpty, "a batch came while the window was full")
        // The client takes its time to acknowledge: the server's own time must not include it.
        try await Task.sleep(for: .milliseconds(400))
        driver.ack("a", b1)
        let b2 = try await driver.message("a", type: "batch")
        #expect(b2["seq"].int == 2)
        let metrics = try await server.get("/metrics").body
        func value(_ name: String) -> Double? {
            metrics.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap {
                Double($0.split(separator: " ")[1])
            }
        }
        #expect(value("pinwheel_viewport_window_wait_seconds_count") == 1)
        #expect((value("pinwheel_viewport_window_wait_seconds_sum") ?? 0) >= 0.35)
        #expect(value("pinwheel_viewport_first_batch_seconds_count") == 2)
        // Both first batches fell under 0.25 s: the server's time leaves out the client's 400 ms.
        #expect(value(#"pinwheel_viewport_first_batch_seconds_bucket{le="0.25"}"#) == 2)
    }

    @Test("a client reporting a slow page gets smaller batches")
    func slowAcksShrinkBatches() async throws {
        let server = try TestServer {
            $0.window = 1
            $0.algorithm = .hierarchical
        }
        let driver = try WSDriver()
        try await driver.open("a", server)
        driver.send("a", viewport(1, europe, zoom: 8, width: 3840, height: 2160))
        let first = try await driver.message("a", type: "batch")
        var sizes = [first["add"].array.count + first["remove"].array.count]
        var last = first
        for _ in 0..<4 where last["done"].bool == false {
            // 50 ms per applied marker: far slower than the default pace.
            driver.send(
                "a",
                ["type": "ack", "batch": last["batch"].int!, "applied": sizes.last!, "ms": 50.0 * Double(sizes.last!)])
            last = try await driver.message("a", type: "batch")
            sizes.append(last["add"].array.count + last["remove"].array.count)
        }
        #expect(sizes.count >= 3)
        #expect(sizes.last! < sizes.first!)
    }

    @Test("expand answers a cluster with its zoom and a same-coordinate group with its spread")
    func expand() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        try await driver.open("a", server)
        driver.send("a", viewport(1, [-180, -85, 180, 85], zoom: 1))
        var view = ClientView()
        try await driver.drain("a", seq: 1, into: &view)
        let cluster = try #require(view.features.values.first { ($0["count"].int ?? 0) > 1 })
        driver.send("a", ["type": "expand", "id": cluster["id"].uint64!])
        let answer = try await driver.message("a", type: "expansion")
        #expect(answer["id"].uint64 == cluster["id"].uint64)
        #expect((answer["zoom"].double ?? 0) > 1 || !answer["spread"].array.isEmpty)

        driver.send("a", ["type": "expand", "id": 123_456_789_012])
        let error = try await driver.message("a", type: "error")
        #expect(error["code"].string == "unknown-feature")
    }

    /// Servers that built both algorithms at start, and one that built only its default (as `serve`
    /// does): the other is built when a session first asks for it.
    @Test(
        "settings switches the algorithm: a new hello, then the view re-served as a diff",
        arguments: [nil, Set([Algorithm.hierarchical])])
    func settingsSwitchesAlgorithm(building: Set<Algorithm>?) async throws {
        let server = try TestServer(building: building) { $0.algorithm = .hierarchical }
        #expect((server.server.clusterers.built(.pcaTree) == nil) == (building != nil))
        let driver = try WSDriver()
        try await driver.open("a", server)
        driver.send("a", viewport(1, europe, zoom: 5))
        var view = ClientView()
        try await driver.drain("a", seq: 1, into: &view)
        driver.send("a", ["type": "settings", "algorithm": "pca-tree"])
        let hello = try await driver.message("a", type: "hello")
        #expect(hello["algorithm"].string == "pca-tree")
        try await driver.drain("a", seq: 1, into: &view)
        #expect(server.server.clusterers.built(.pcaTree) != nil)
        let expected = server.coreFeatures(bbox: europe, zoom: 5, algorithm: .pcaTree)
        #expect(!expected.isEmpty && Set(view.features.keys) == Set(expected.keys))
    }

    @Test("200 sessions at once are all served in full")
    func twoHundredSessions() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        driver.command([
            "op": "swarm", "url": server.wsURL, "n": 200, "origin": server.origin,
            "viewport": ["bbox": europe, "zoom": 5, "width": 1280, "height": 800],
        ])
        let result = try await driver.next(timeout: .seconds(120)) { $0["event"].string == "swarm" }
        #expect(result["ok"].int == 200, "\(result["errors"])")
        let expected = server.coreFeatures(bbox: europe, zoom: 5).count
        #expect(result["features"].array.allSatisfy { $0.int == expected })
    }
}
