import Foundation
import PinwheelCore
import Testing

@testable import PinwheelServer

/// What keeps a producer's retry from applying a request twice, or late: the stall record, the file
/// log's key window and a frame's key line.
@Suite("Ingest retries")
struct IngestRetryTests {
    static let start = ContinuousClock.now

    static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int64(seconds * 1000)) }

    @Test("ticks 100 ms apart are no stall; a 30 s gap is one, and it taints requests received before it")
    func stallRecorded() {
        var record = StallRecord(threshold: .seconds(2), grace: .seconds(1), now: Self.at(0))
        for k in 1...10 { #expect(record.tick(at: Self.at(Double(k) / 10)) == nil) }
        #expect(record.stall(holding: Self.at(0.5), now: Self.at(1.05)) == nil)
        #expect(record.tick(at: Self.at(31)) == .seconds(30))
        #expect(record.stall(holding: Self.at(0.5), now: Self.at(31.05)) == .seconds(30))
        // Read from the kernel in the first moments after the stall: it may have waited through it.
        #expect(record.stall(holding: Self.at(31.5), now: Self.at(31.6)) == .seconds(30))
        // Received well after it: fresh.
        #expect(record.stall(holding: Self.at(32.5), now: Self.at(32.6)) == nil)
    }

    @Test("a stall going on is seen before the ticking thread runs again")
    func stallSeenBeforeTick() {
        var record = StallRecord(threshold: .seconds(2), grace: .seconds(1), now: Self.at(0))
        _ = record.tick(at: Self.at(0.1))
        #expect(record.stall(holding: Self.at(0.05), now: Self.at(20.1)) == .seconds(20))
    }

    @Test("a key answered is answered again with its version; in flight is refused; forgotten after the window")
    func keyWindow() {
        var window = IdempotencyWindow(window: .seconds(120), capacity: 3)
        #expect(window.begin("a", at: Self.at(0)) == .new)
        #expect(window.begin("a", at: Self.at(1)) == .inFlight)
        window.finish("a", version: 42, at: Self.at(1))
        #expect(window.begin("a", at: Self.at(2)) == .done(42))
        #expect(window.begin("a", at: Self.at(122)) == .new)
    }

    @Test("a failed append forgets its key; the oldest keys go beyond the capacity")
    func keyWindowBounds() {
        var window = IdempotencyWindow(window: .seconds(120), capacity: 3)
        #expect(window.begin("failed", at: Self.at(0)) == .new)
        window.finish("failed", version: nil, at: Self.at(0))
        #expect(window.begin("failed", at: Self.at(0)) == .new)
        for (k, key) in ["k1", "k2", "k3", "k4"].enumerated() {
            #expect(window.begin(key, at: Self.at(1)) == .new)
            window.finish(key, version: UInt64(k + 1), at: Self.at(1))
        }
        #expect(window.count == 3)
        #expect(window.begin("k1", at: Self.at(2)) == .new)
        #expect(window.begin("k4", at: Self.at(2)) == .done(4))
    }

    @Test("a frame's first line may carry its key; a malformed key line is named")
    func frameKey() throws {
        let keyed = Array(#"{"idempotency-key":"abc-1"}"#.utf8) + Array("\n{\"op\":\"delete\",\"id\":1}\n".utf8)
        let (key, rest) = try IngestConnection.splitKey(keyed).get()
        #expect(key == "abc-1")
        #expect(Array(rest) == Array("{\"op\":\"delete\",\"id\":1}\n".utf8))
        let plain = Array("{\"op\":\"delete\",\"id\":1}\n".utf8)
        let (none, all) = try IngestConnection.splitKey(plain).get()
        #expect(none == nil && Array(all) == plain)
        let bad = Array(#"{"idempotency-key":7}"#.utf8)
        #expect(throws: IngestConnection.KeyProblem.self) { try IngestConnection.splitKey(bad).get() }
    }

    @Test("keys are 1 to 128 visible ASCII characters")
    func keyShape() {
        #expect(Ingest.problem(withKey: "order-2026-11-22/17") == nil)
        #expect(Ingest.problem(withKey: "") != nil)
        #expect(Ingest.problem(withKey: "has space") != nil)
        #expect(Ingest.problem(withKey: String(repeating: "k", count: 129)) != nil)
    }

    @Test("a duplicate's answer says so; a first answer is as before")
    func duplicateAnswer() {
        let first = IngestAnswer(accepted: 1, rejected: [], version: 9)
        #expect(String(decoding: first.json(), as: UTF8.self) == #"{"accepted":1,"rejected":[],"version":9}"#)
        let again = IngestAnswer(accepted: 1, rejected: [], version: 9, duplicate: true)
        #expect(
            String(decoding: again.json(), as: UTF8.self)
                == #"{"accepted":1,"rejected":[],"version":9,"duplicate":true}"#)
    }
}
