import Foundation
import PinwheelCore
import PinwheelTestSupport
import Testing

@testable import PinwheelServer

@Suite("Bad input: an error or a close, and the server keeps serving", .serialized)
struct BadInputTests {
    /// Sends `text` and expects an `error` with `code` naming `field`; then checks the same session
    /// still gets a viewport served.
    func expectError(_ text: String, code: String, field: String?) async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        try await driver.open("a", server)
        driver.send("a", text: text)
        let error = try await driver.message("a", type: "error")
        #expect(error["code"].string == code, "\(text) -> \(error)")
        if let field { #expect(error["field"].string == field, "\(text) -> \(error)") }
        #expect(!(error["message"].string ?? "").isEmpty)
        driver.send("a", viewport(1, europe, zoom: 4))
        var view = ClientView()
        try await driver.drain("a", seq: 1, into: &view)
        #expect(!view.features.isEmpty)
    }

    @Test("malformed JSON gets bad-json")
    func malformedJSON() async throws {
        try await expectError(#"{"type":"viewport","seq":1,"#, code: "bad-json", field: nil)
    }

    @Test("an unknown type gets unknown-type naming type")
    func unknownType() async throws {
        try await expectError(#"{"type":"teleport"}"#, code: "unknown-type", field: "type")
    }

    @Test("a missing field gets missing-field naming it")
    func missingField() async throws {
        try await expectError(
            #"{"type":"viewport","seq":1,"zoom":3,"width":800,"height":600}"#, code: "missing-field", field: "bbox")
    }

    @Test("a wrong-typed field gets invalid-field naming it")
    func wrongType() async throws {
        try await expectError(
            #"{"type":"viewport","seq":1,"bbox":[0,0,1,1],"zoom":"three","width":800,"height":600}"#,
            code: "invalid-field", field: "zoom")
    }

    @Test("NaN gets invalid-field naming the field")
    func notANumber() async throws {
        try await expectError(
            #"{"type":"viewport","seq":1,"bbox":[0,0,1,1],"zoom":NaN,"width":800,"height":600}"#,
            code: "invalid-field", field: "zoom")
    }

    @Test("Infinity gets invalid-field naming the field")
    func infinity() async throws {
        try await expectError(
            #"{"type":"viewport","seq":1,"bbox":[0,0,Infinity,1],"zoom":3,"width":800,"height":600}"#,
            code: "invalid-field", field: "bbox")
    }

    @Test("a latitude beyond 90 gets invalid-field naming bbox")
    func latitudeOutOfRange() async throws {
        try await expectError(
            #"{"type":"viewport","seq":1,"bbox":[0,-95,10,10],"zoom":3,"width":800,"height":600}"#,
            code: "invalid-field", field: "bbox")
    }

    @Test("a zoom beyond 24 gets invalid-field naming zoom")
    func zoomOutOfRange() async throws {
        try await expectError(
            #"{"type":"viewport","seq":1,"bbox":[0,0,10,10],"zoom":31,"width":800,"height":600}"#,
            code: "invalid-field", field: "zoom")
    }

    @Test("a width of 0 gets invalid-field naming width")
    func zeroWidth() async throws {
        try await expectError(
            #"{"type":"viewport","seq":1,"bbox":[0,0,10,10],"zoom":3,"width":0,"height":600}"#,
            code: "invalid-field", field: "width")
    }

    @Test("a height over 16384 gets invalid-field naming height")
    func hugeHeight() async throws {
        try await expectError(
            #"{"type":"viewport","seq":1,"bbox":[0,0,10,10],"zoom":3,"width":800,"height":16385}"#,
            code: "invalid-field", field: "height")
    }

    @Test("a bbox wider than the world is served as the whole world")
    func worldWideBBox() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        try await driver.open("a", server)
        driver.send("a", viewport(1, [-400, -80, 400, 80], zoom: 1))
        var view = ClientView()
        try await driver.drain("a", seq: 1, into: &view)
        #expect(Set(view.features.keys) == Set(server.coreFeatures(bbox: [-180, -80, 180, 80], zoom: 1).keys))
    }

    @Test("a message over the limit closes with 1009")
    func oversize() async throws {
        let server = try TestServer { $0.maxMessageBytes = 4096 }
        let driver = try WSDriver()
        try await driver.open("a", server)
        try await driver.open("b", server)
        driver.send("a", text: #"{"type":"expand","id":1,"pad":""# + String(repeating: "x", count: 8000) + #""}"#)
        #expect(try await driver.closed("a").code == 1009)
        try await stillServes(driver, "b")
    }

    @Test("a binary frame closes with 1003")
    func binaryFrame() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        try await driver.open("a", server)
        try await driver.open("b", server)
        driver.send("a", bytes: [1, 2, 3], binary: true)
        #expect(try await driver.closed("a").code == 1003)
        try await stillServes(driver, "b")
    }

    @Test("invalid UTF-8 closes with 1007")
    func invalidUTF8() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        try await driver.open("a", server)
        try await driver.open("b", server)
        driver.send("a", bytes: Array(#"{"type":"#.utf8) + [0xC3, 0x28] + Array("}".utf8), binary: false)
        #expect(try await driver.closed("a").code == 1007)
        try await stillServes(driver, "b")
    }

    @Test("more than 100 messages a second for 5 seconds closes with 1008")
    func flood() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        try await driver.open("a", server)
        try await driver.open("b", server)
        let ack = #"{"type":"ack","batch":1,"applied":0,"ms":0}"#
        let started = ContinuousClock.now
        driver.command(["op": "flood", "id": "a", "text": ack, "rate": 300, "seconds": 12])
        let closeCode = try await driver.closed("a", timeout: .seconds(30)).code
        // The server closed with 1008; the client sees that code unless its own unread messages made
        // the kernel reset the connection first (then 1006).
        #expect(closeCode == 1008 || closeCode == 1006)
        #expect(ContinuousClock.now - started >= .seconds(4))
        let metrics = try await server.get("/metrics")
        #expect(metrics.body.contains(#"pinwheel_closes_total{code="1008"} 1"#))
        try await stillServes(driver, "b")
    }

    @Test("a disallowed origin is refused")
    func disallowedOrigin() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        let refused = try await driver.connect("a", url: server.wsURL, origin: "http://evil.example")
        #expect(refused["event"].string == "refused")
        let allowed = try await driver.connect("b", url: server.wsURL, origin: server.origin)
        #expect(allowed["event"].string == "open")
    }

    @Test("sessions beyond --max-sessions close with 1013")
    func tooManySessions() async throws {
        let server = try TestServer { $0.maxSessions = 2 }
        let driver = try WSDriver()
        try await driver.open("a", server)
        try await driver.open("b", server)
        _ = try await driver.connect("c", url: server.wsURL, origin: server.origin)
        #expect(try await driver.closed("c").code == 1013)
        try await stillServes(driver, "a")
    }

    @Test("a data file with a bad row is refused naming the file, line and column")
    func badDataFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("pinwheel-bad-\(getpid()).csv").path
        try "lat,lon,name\n48.85,2.35,Paris\n91.5,2.0,Nowhere\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect {
            try DatasetSource.file(path).load()
        } throws: { error in
            let text = String(describing: error)
            return text.contains(path) && text.contains("line 3") && text.contains("lat")
        }
    }

    /// Checks that another session still gets a viewport served in full.
    func stillServes(_ driver: WSDriver, _ id: String) async throws {
        driver.send(id, viewport(7, europe, zoom: 4))
        var view = ClientView()
        try await driver.drain(id, seq: 7, into: &view)
        #expect(!view.features.isEmpty)
    }
}
