import Foundation
import PinwheelCore
import PinwheelTestSupport
import PinwheelTransport
import Synchronization
import Testing

@testable import PinwheelLoad
@testable import PinwheelServer

@Suite("pinwheel load against a real server", .serialized)
struct LoadEngineTests {
    @Test("50 clients touring for a few seconds: no errors, every viewport answered by its done or a later one's")
    func fiftyClients() throws {
        let server = try TestServer()
        var options = LoadOptions(url: server.wsURL)
        options.clients = 50
        options.duration = .seconds(3)
        options.ramp = .milliseconds(500)
        // Below the server's 10 Hz, so it has no reason to coalesce; only a viewport arriving while the
        // previous one is still being paced out cancels that one's rest (and its done).
        options.viewportHz = 4
        options.trace = .mixed
        options.seed = 11
        let report = try LoadRunner(options: options).run()
        #expect(report.errors.isEmpty, "\(report.errors)")
        #expect(report.totals.connected == 50)
        #expect(report.totals.viewportsSent > 200)
        #expect(report.totals.viewportsUnanswered == 0)
        #expect(report.totals.viewportsAnswered + report.totals.viewportsSuperseded == report.totals.viewportsSent)
        #expect(report.totals.viewportsSuperseded * 20 < report.totals.viewportsSent)
        #expect(report.latency.done.count == UInt64(report.totals.viewportsAnswered))
        // Every answered viewport had a first batch; superseded ones may have had one too.
        #expect(report.latency.firstBatch.count >= report.latency.done.count && report.latency.done.p50 > 0)
        #expect(report.closesDuringRun.isEmpty)
        #expect(report.closes == ["1000": 50])
        #expect(report.totals.bytes > 0 && report.totals.bytes < report.totals.naiveBytes)
        let side = try #require(report.server)
        #expect(side.error == nil)
        #expect(side.sessionsAfter == 50)
        #expect((side.cpuSeconds ?? 0) > 0)
        // The server's own first-batch figures for this run, read from its histogram.
        #expect(side.firstBatchCount.map { $0 > 0 && $0 <= Double(report.totals.viewportsSent) } == true)
        #expect(side.firstBatchWithin5msPercent.map { (0...100).contains($0) } == true)
        #expect(side.windowWaits != nil && side.firstBatchP99Ms != nil)
        // The tool's own use over the steady part.
        let tool = try #require(report.tool)
        #expect(
            tool.cpuPercent > 0 && tool.busiestThreadPercent > 0 && tool.busiestThreadPercent <= tool.cpuPercent + 0.001
        )
        #expect((0...100).contains(tool.machineIdlePercent) && tool.cores >= 1)
        let table = LoadTable.render(report)
        #expect(table.contains("first batch within 5 ms:") && table.contains("tool        CPU"))
        #expect(report.clients.count == 50 && report.clients.allSatisfy { $0.viewportsSent > 0 && !$0.session.isEmpty })
    }
}

@Suite("pinwheel load --encoding binary", .serialized)
struct LoadBinaryTests {
    @Test(
        "binary batches are decoded and acknowledged like JSON ones, for a quarter of the bytes per marker or less; deflate saves wire bytes"
    )
    func binaryAgainstJSON() throws {
        let server = try TestServer()
        var reports: [String: LoadReport] = [:]
        for (encoding, deflate) in [(WireEncoding.json, false), (.binary, false), (.binary, true)] {
            var options = LoadOptions(url: server.wsURL)
            options.clients = 5
            options.duration = .seconds(2)
            options.ramp = .zero
            options.viewportHz = 2
            options.trace = .pan
            options.seed = 3
            options.encoding = encoding
            options.deflate = deflate
            let report = try LoadRunner(options: options).run()
            #expect(report.errors.isEmpty, "\(report.errors)")
            #expect(report.run.encoding == encoding.rawValue && report.run.deflate == deflate)
            #expect(report.totals.viewportsUnanswered == 0 && report.totals.viewportsAnswered > 10)
            #expect(report.totals.features > 0 && report.totals.bytesPerMarker > 0 && report.totals.wireBytes > 0)
            #expect(LoadTable.render(report).contains("\(encoding.rawValue), deflate \(deflate ? "on" : "off")"))
            reports["\(encoding.rawValue) \(deflate)"] = report
        }
        let json = try #require(reports["pinwheel.v1 false"])
        let binary = try #require(reports["pinwheel.v1+bin false"])
        let deflated = try #require(reports["pinwheel.v1+bin true"])
        #expect(binary.totals.bytesPerMarker * 4 < json.totals.bytesPerMarker)
        // Without deflate the wire carries the payload and the framing; deflate takes some of it away.
        #expect(binary.totals.wireBytes > binary.totals.bytes)
        #expect(deflated.totals.wireBytesPerMarker < binary.totals.wireBytesPerMarker)
    }
}

@Suite("Presence against a real server", .serialized)
struct LoadPresenceTests {
    /// The session ids named by a client's latest presence message, nil before any.
    static func latestPresence(_ delegate: RecordingClientDelegate, _ id: ConnectionID) -> [String]? {
        guard let text = delegate.messages(id).last(where: { $0.contains(#""type":"presence""#) }),
            let ids = LoadGroup.readPresence(Array(text.utf8))
        else { return nil }
        return ids
    }

    static func session(_ delegate: RecordingClientDelegate, _ id: ConnectionID) -> String? {
        guard let text = delegate.messages(id).first(where: { $0.contains(#""type":"hello""#) }) else { return nil }
        return LoadGroup.readHello(Array(text.utf8))?.session
    }

    @Test("a session's viewport appears in a second session's presence and disappears when the first closes")
    func appearsAndDisappears() throws {
        let server = try TestServer()
        let (client, delegate) = try makeClient()
        defer { client.stop() }
        let first = try client.connect(to: server.wsURL, subprotocol: "pinwheel.v1", origin: server.origin)
        let second = try client.connect(to: server.wsURL, subprotocol: "pinwheel.v1", origin: server.origin)
        #expect(eventually { Self.session(delegate, first) != nil && Self.session(delegate, second) != nil })
        let firstSession = try #require(Self.session(delegate, first))
        client.send(#"{"type":"settings","presence":true}"#, to: second)
        client.send(
            #"{"type":"viewport","seq":1,"bbox":[2.2,48.8,2.5,48.9],"zoom":12,"width":1280,"height":800}"#, to: first)
        #expect(eventually { Self.latestPresence(delegate, second) == [firstSession] })
        // The first session never asked: it gets no presence at all.
        #expect(!delegate.messages(first).contains { $0.contains(#""type":"presence""#) })
        // Presence alone does not re-send a hello.
        #expect(delegate.messages(second).filter { $0.contains(#""type":"hello""#) }.count == 1)
        client.close(first)
        #expect(eventually { Self.latestPresence(delegate, second) == [] })
    }

    @Test("serve --bots: simulated tourists show up in a watching session's presence")
    func bots() throws {
        let server = try TestServer()
        let bots = try TouristBots(
            count: 5, url: server.wsURL, origin: server.origin, viewportHz: 5, ramp: .milliseconds(200))
        defer { bots.stop() }
        let (client, delegate) = try makeClient()
        defer { client.stop() }
        let watcher = try client.connect(to: server.wsURL, subprotocol: "pinwheel.v1", origin: server.origin)
        #expect(eventually { Self.session(delegate, watcher) != nil })
        client.send(#"{"type":"settings","presence":true}"#, to: watcher)
        #expect(eventually { bots.touring == 5 })
        #expect(eventually { Self.latestPresence(delegate, watcher)?.count == 5 })
    }
}
