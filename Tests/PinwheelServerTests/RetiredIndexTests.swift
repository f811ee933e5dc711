import Foundation
import PinwheelCore
import PinwheelTestSupport
import Testing

@testable import PinwheelServer

/// A live server's sessions hand the indexes they stop serving from to the index thread, which lets
/// go of them: none may be held longer than that.
@Suite("Retired live indexes", .serialized)
struct RetiredIndexTests {
    @Test("the index a viewer was served from is freed once the viewer has taken up a newer one")
    func retiredIndexIsFreed() async throws {
        let (server, folder) = try startLiveServer(token: "retired-index-test")
        defer { server.stop() }
        _ = folder
        let driver = try WSDriver()
        try await driver.connect("a", url: "ws://127.0.0.1:\(server.port)/", origin: "http://127.0.0.1:\(server.port)")
        _ = try await driver.message("a", type: "hello")
        driver.send("a", viewport(1, europe, zoom: 5))
        var view = ClientView()
        try await driver.drain("a", seq: 1, into: &view)

        weak let servedBefore = server.clusterers.clusterer(for: .hierarchical) as AnyObject
        #expect(servedBefore != nil)
        // A point moved into the view: a refresh publishes a newer index, and the viewer is sent the move.
        let move = Array(#"{"op":"upsert","id":42,"lat":47,"lon":5}"#.utf8)
        guard case .answered(let status, let answer) = server.ingest!.submit(move, producer: "test") else {
            Issue.record("the change was not taken")
            return
        }
        #expect(status == 200 && answer.accepted == 1)
        let update = try await driver.message("a", type: "batch")
        #expect(update["version"].uint64 == answer.version)
        let deadline = ContinuousClock.now + .seconds(10)
        while servedBefore != nil && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(servedBefore == nil, "the index served before the change is still held")
    }
}
