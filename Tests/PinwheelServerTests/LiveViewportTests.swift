import Foundation
import PinwheelCore
import PinwheelTestSupport
import Testing

@testable import PinwheelServer

/// Viewers of a server whose data changes: pans over changed data read as moves, and the wait
/// between refreshes stretching while viewports are answered slowly.
@Suite("Viewports over live data", .serialized)
struct LiveViewportTests {
    /// Submits NDJSON changes and returns the version that holds them.
    static func change(_ server: Server, _ lines: [String]) throws -> UInt64 {
        let body = Array(lines.joined(separator: "\n").utf8)
        guard case .answered(let status, let answer) = server.ingest!.submit(body, producer: "test") else {
            throw TestFailure("the changes were not taken")
        }
        #expect(status == 200 && answer.accepted == lines.count)
        return answer.version
    }

    struct TestFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func metrics(_ server: Server) async throws -> String {
        let (status, body) = try await TestServer.get("http://127.0.0.1:\(server.port)/metrics")
        #expect(status == 200)
        return body
    }

    /// Receives and acknowledges batches on `id` until one computed from data at `version` or later.
    static func receive(_ driver: WSDriver, _ id: String, upTo version: UInt64, into view: inout ClientView)
        async throws
    {
        while true {
            let batch = try await driver.message(id, type: "batch", timeout: .seconds(10))
            view.apply(batch)
            driver.ack(id, batch)
            if batch["version"].uint64 ?? 0 >= version { return }
        }
    }

    @Test("pans over changes laid over the build are read as moves, and each view ends exactly the index's")
    func pansOverChangedDataAreMoves() async throws {
        // No compaction while the viewer pans: every pan reads the same live index, changes laid over it.
        let (server, folder) = try startLiveServer(token: "live-viewport-test") {
            $0.compactionInterval = .seconds(3600)
        }
        defer { server.stop() }
        _ = folder
        let driver = try WSDriver()
        try await driver.connect("a", url: "ws://127.0.0.1:\(server.port)/", origin: "http://127.0.0.1:\(server.port)")
        _ = try await driver.message("a", type: "hello")
        var view = ClientView()
        driver.send("a", viewport(1, europe, zoom: 6))
        try await driver.drain("a", seq: 1, into: &view)
        // Points moved, added and deleted where the viewer is about to pan.
        var lines = (0..<40).map { k in
            #"{"op":"upsert","id":"mover-\#(k)","lat":\#(43 + Double(k % 8)),"lon":\#(-4 + Double(k) * 0.6)}"#
        }
        let ids = TestServer.dataset.dataset.ids
        lines += (0..<20).map { k in #"{"op":"upsert","id":\#(ids[k * 7]),"lat":47.5,"lon":\#(2 + Double(k) * 0.5)}"# }
        lines += (0..<20).map { k in #"{"op":"delete","id":\#(ids[k * 7 + 3])}"# }
        let version = try Self.change(server, lines)
        // The refresh brings the view up to the changes.
        try await Self.receive(driver, "a", upTo: version, into: &view)
        #expect(try #require(metricValue(try await Self.metrics(server), "pinwheel_index_delta_points")) > 0)
        let before = try #require(
            metricValue(try await Self.metrics(server), #"pinwheel_viewport_reads_total{read="moved"}"#))
        for k in 1...4 {
            let west = -5 + 2 * Double(k)
            let box = [west, 42, west + 20, 52]
            driver.send("a", viewport(k + 1, box, zoom: 6))
            try await driver.drain("a", seq: k + 1, into: &view)
            var out: [Feature] = []
            server.clusterers.clusterer(for: .hierarchical).features(
                in: BBox(west: box[0], south: box[1], east: box[2], north: box[3]), zoom: 6, into: &out)
            #expect(Set(view.features.keys) == Set(out.map(\.id)), "pan \(k)")
        }
        let after = try #require(
            metricValue(try await Self.metrics(server), #"pinwheel_viewport_reads_total{read="moved"}"#))
        #expect(after - before == 4, "every pan read as a move")
    }

    @Test(
        "viewports answered slowly stretch the wait between refreshes to three times the configured one, and changes still arrive"
    )
    func slowViewportsStretchRefreshes() async throws {
        // Every first batch counts as slow here.
        let (server, folder) = try startLiveServer(token: "live-viewport-test") {
            $0.slowFirstBatch = .zero
            $0.refreshInterval = .milliseconds(100)
        }
        defer { server.stop() }
        _ = folder
        #expect(metricValue(try await Self.metrics(server), "pinwheel_refresh_interval_seconds") == 0.1)
        let driver = try WSDriver()
        // Six viewports sent together: however a refresh's window cuts them, one window holds the
        // three slow first batches a stretch needs.
        let viewers = ["a", "b", "c", "d", "e", "f"]
        for name in viewers {
            try await driver.connect(
                name, url: "ws://127.0.0.1:\(server.port)/", origin: "http://127.0.0.1:\(server.port)")
            _ = try await driver.message(name, type: "hello")
        }
        var interval = 0.1
        var seq = 0
        let deadline = ContinuousClock.now + .seconds(20)
        while interval < 0.3 && ContinuousClock.now < deadline {
            seq += 1
            let west = -5 + Double(seq % 10)
            for name in viewers { driver.send(name, viewport(seq, [west, 42, west + 20, 52], zoom: 6)) }
            for name in viewers {
                var view = ClientView()
                try await driver.drain(name, seq: seq, into: &view)
            }
            try await Task.sleep(for: .milliseconds(110))
            interval = try #require(metricValue(try await Self.metrics(server), "pinwheel_refresh_interval_seconds"))
        }
        #expect(abs(interval - 0.3) < 1e-9, "the interval reached \(interval) s")
        // Refreshes are further apart, not gone: a change in view reaches the viewer.
        var view = ClientView()
        seq += 1
        driver.send("a", viewport(seq, europe, zoom: 6))
        try await driver.drain("a", seq: seq, into: &view)
        let version = try Self.change(server, [#"{"op":"upsert","id":"late","lat":47,"lon":5}"#])
        try await Self.receive(driver, "a", upTo: version, into: &view)
        #expect(view.batches.last?["version"].uint64 == version)
    }
}
