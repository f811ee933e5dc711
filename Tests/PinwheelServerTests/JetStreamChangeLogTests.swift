import Foundation
import PinwheelCore
import Synchronization
import Testing

@testable import PinwheelServer

/// The replicated change log against a real `nats-server` with JetStream: several logs on one stream
/// stand for several nodes.
@Suite("JetStream change log", .serialized)
struct JetStreamChangeLogTests {
    typealias Directory = FileChangeLogTests.Directory
    typealias Replayed = FileChangeLogTests.Replayed

    static func options(_ server: NATSServerProcess, _ dir: Directory) -> JetStreamChangeLog.Options {
        var options = JetStreamChangeLog.Options(servers: [server.url], directory: dir.path)
        options.publishTimeout = .seconds(2)
        return options
    }

    /// Appends and waits for the answer.
    static func appendAndWait(_ log: JetStreamChangeLog, _ changes: [Change]) throws -> UInt64 {
        let result = Mutex<Result<UInt64, ChangeLogError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        log.append(changes) { r in
            result.withLock { $0 = r }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Waits until `condition` holds, for at most 10 s.
    static func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return true
    }

    @Test("two nodes appending at once both apply every record in one order with the same versions")
    func twoNodesAgree() throws {
        let server = try NATSServerProcess()
        let (dirA, dirB) = (Directory(), Directory())
        let a = try JetStreamChangeLog(options: Self.options(server, dirA))
        let b = try JetStreamChangeLog(options: Self.options(server, dirB))
        let (seenA, seenB) = (Replayed(), Replayed())
        #expect(try a.open(after: 0) { seenA.add($0) } == 0)
        #expect(try b.open(after: 0) { seenB.add($0) } == 0)
        let answers = Mutex<[UInt64]>([])
        DispatchQueue.concurrentPerform(iterations: 40) { k in
            let log = k % 2 == 0 ? a : b
            let batch = (0..<(k % 3 + 1)).map { FileChangeLogTests.change(k * 10 + $0) }
            if let version = try? Self.appendAndWait(log, batch) { answers.withLock { $0.append(version) } }
        }
        let total = (0..<40).reduce(0) { $0 + $1 % 3 + 1 }
        #expect(answers.withLock { $0.count } == 40)
        #expect(Self.eventually { seenA.changes.count == total && seenB.changes.count == total })
        #expect(seenA.records.withLock { $0 } == seenB.records.withLock { $0 })
        // Versions count changes without gaps, in stream order.
        var next: UInt64 = 1
        for record in seenA.records.withLock({ $0 }) {
            #expect(record.first == next)
            next = record.last + 1
        }
        // Every answer is the last version of a record that was applied.
        let lasts = Set(seenA.records.withLock { $0.map(\.last) })
        #expect(answers.withLock { $0.allSatisfy { lasts.contains($0) } })
        a.close()
        b.close()
    }

    @Test("an answered append has been applied on the appending node already")
    func appliedBeforeAnswer() throws {
        let server = try NATSServerProcess()
        let dir = Directory()
        let log = try JetStreamChangeLog(options: Self.options(server, dir))
        let seen = Replayed()
        _ = try log.open(after: 0) { seen.add($0) }
        for k in 0..<20 {
            let version = try Self.appendAndWait(log, [FileChangeLogTests.change(k)])
            #expect(version == UInt64(k + 1))
            #expect(seen.records.withLock { $0.last?.last } == version)
        }
        log.close()
    }

    @Test("a restarted node loads its snapshot, then replays only the records after it, others' included")
    func restartCatchesUp() throws {
        let server = try NATSServerProcess()
        let (dirA, dirB) = (Directory(), Directory())
        var a = try JetStreamChangeLog(options: Self.options(server, dirA))
        #expect(try a.latestSnapshot() == nil)
        try a.saveSnapshot(LogSnapshot(version: 0, bytes: [1, 2, 3]))
        _ = try a.open(after: 0) { _ in }
        let b = try JetStreamChangeLog(options: Self.options(server, dirB))
        try b.saveSnapshot(LogSnapshot(version: 0, bytes: [1, 2, 3]))
        let seenB = Replayed()
        _ = try b.open(after: 0) { seenB.add($0) }
        var expected: [Change] = []
        for k in 0..<10 {
            let batch = [FileChangeLogTests.change(k), FileChangeLogTests.change(100 + k)]
            expected += batch
            _ = try Self.appendAndWait(a, batch)
        }
        try a.saveSnapshot(LogSnapshot(version: 20, bytes: [4, 5, 6]))
        a.close()
        // While A is down, B takes 30 more changes.
        for k in 10..<25 {
            let batch = [FileChangeLogTests.change(k), FileChangeLogTests.change(100 + k)]
            expected += batch
            _ = try Self.appendAndWait(b, batch)
        }
        a = try JetStreamChangeLog(options: Self.options(server, dirA))
        let snapshot = try #require(try a.latestSnapshot())
        #expect(snapshot == LogSnapshot(version: 20, bytes: [4, 5, 6]))
        let replayed = Replayed()
        let last = try a.open(after: 20) { replayed.add($0) }
        #expect(last == 50)
        #expect(replayed.firsts.first == 21)
        #expect(replayed.changes == Array(expected[20...]))
        #expect(seenB.changes == expected)
        a.close()
        b.close()
    }

    @Test("a node whose snapshot is newer than the stream (deleted and made again) refuses to start")
    func streamBehindSnapshot() throws {
        let server = try NATSServerProcess()
        let (dirA, dirB) = (Directory(), Directory())
        let a = try JetStreamChangeLog(options: Self.options(server, dirA))
        try a.saveSnapshot(LogSnapshot(version: 0, bytes: []))
        _ = try a.open(after: 0) { _ in }
        for k in 0..<5 { _ = try Self.appendAndWait(a, [FileChangeLogTests.change(k)]) }
        try a.saveSnapshot(LogSnapshot(version: 5, bytes: [5]))
        a.close()
        let admin = try NATSConnection(servers: [server.url], name: "test")
        try admin.deleteStream(a.options.stream)
        _ = try JetStreamChangeLog(options: Self.options(server, dirB))
        let again = try JetStreamChangeLog(options: Self.options(server, dirA))
        #expect(try again.latestSnapshot()?.version == 5)
        #expect(throws: ChangeLogError.streamBehind(stream: "PINWHEEL", lastSequence: 0, snapshotSequence: 5)) {
            _ = try again.open(after: 5) { _ in }
        }
    }

    @Test("a node whose next records were purged from the stream refuses to start rather than skip them")
    func streamTrimmedAfterSnapshot() throws {
        let server = try NATSServerProcess()
        let (dirA, dirB) = (Directory(), Directory())
        let a = try JetStreamChangeLog(options: Self.options(server, dirA))
        try a.saveSnapshot(LogSnapshot(version: 0, bytes: []))
        _ = try a.open(after: 0) { _ in }
        for k in 0..<5 {
            _ = try Self.appendAndWait(a, [FileChangeLogTests.change(k)])
            if k == 1 { try a.saveSnapshot(LogSnapshot(version: 2, bytes: [2])) }
        }
        a.close()
        // B is running through the purge; a node starting from nothing afterwards could not.
        let b = try JetStreamChangeLog(options: Self.options(server, dirB))
        try b.saveSnapshot(LogSnapshot(version: 0, bytes: []))
        _ = try b.open(after: 0) { _ in }
        let admin = try NATSConnection(servers: [server.url], name: "test")
        try admin.purgeStream(a.options.stream)
        _ = try Self.appendAndWait(b, [FileChangeLogTests.change(9)])
        b.close()
        let again = try JetStreamChangeLog(options: Self.options(server, dirA))
        #expect(try again.latestSnapshot()?.version == 2)
        #expect(throws: ChangeLogError.streamTrimmed(stream: "PINWHEEL", firstSequence: 6, snapshotSequence: 2)) {
            _ = try again.open(after: 2) { _ in }
        }
    }

    @Test("a node starting from other data than the stream was made for is refused; the same data is welcome")
    func initialDataMustMatch() throws {
        let server = try NATSServerProcess()
        let (dirA, dirB, dirC) = (Directory(), Directory(), Directory())
        let a = try JetStreamChangeLog(options: Self.options(server, dirA))
        try a.saveSnapshot(LogSnapshot(version: 0, bytes: [1, 2, 3]))
        let b = try JetStreamChangeLog(options: Self.options(server, dirB))
        #expect {
            try b.saveSnapshot(LogSnapshot(version: 0, bytes: [9]))
        } throws: { error in
            guard case .initialDataDiffers(let stream, _, _) = error as? ChangeLogError else { return false }
            return stream == "PINWHEEL"
        }
        let c = try JetStreamChangeLog(options: Self.options(server, dirC))
        try c.saveSnapshot(LogSnapshot(version: 0, bytes: [1, 2, 3]))
    }

    @Test("starting, NATS errors are tried again until the time is up; other errors are not")
    func retriesNATSErrorsWhileStarting() throws {
        let timeout = ChangeLogError.nats(function: "js_Subscribe", reason: "Timeout")
        var attempts = 0
        var pauses = 0
        let value = try JetStreamChangeLog.retryingNATSErrors(
            for: .seconds(30), pause: { pauses += 1 },
            attempt: { () throws(ChangeLogError) in
                attempts += 1
                if attempts < 3 { throw timeout }
                return 7
            })
        #expect(value == 7 && attempts == 3 && pauses == 2)

        attempts = 0
        #expect(throws: ChangeLogError.closed) {
            try JetStreamChangeLog.retryingNATSErrors(
                for: .seconds(30), pause: {},
                attempt: { () throws(ChangeLogError) in
                    attempts += 1
                    throw ChangeLogError.closed
                })
        }
        #expect(attempts == 1)

        attempts = 0
        #expect(throws: timeout) {
            try JetStreamChangeLog.retryingNATSErrors(
                for: .milliseconds(50), pause: { usleep(10_000) },
                attempt: { () throws(ChangeLogError) in
                    attempts += 1
                    throw timeout
                })
        }
        #expect(attempts >= 2 && attempts < 10)
    }

    @Test("with no NATS server answering, the error names the C function that failed")
    func noServer() {
        let dir = Directory()
        let options = JetStreamChangeLog.Options(
            servers: ["nats://127.0.0.1:\(NATSServerProcess.freePort())"], directory: dir.path)
        #expect {
            _ = try JetStreamChangeLog(options: options)
        } throws: { error in
            guard case .nats(let function, let reason) = error as? ChangeLogError else { return false }
            return function == "natsConnection_Connect" && !reason.isEmpty
        }
    }

    @Test("appends after close fail as closed, and none reaches the stream")
    func closedRefuses() throws {
        let server = try NATSServerProcess()
        let dir = Directory()
        let log = try JetStreamChangeLog(options: Self.options(server, dir))
        _ = try log.open(after: 0) { _ in }
        log.close()
        #expect(throws: ChangeLogError.closed) { try Self.appendAndWait(log, [FileChangeLogTests.change(1)]) }
    }

    /// Something a handler holds, to see when the client lets the handler go.
    final class Token: Sendable {}

    @Test("once a connection closes, the client lets go of its subscription's handler and its event handler")
    func handlersReleasedAfterClose() throws {
        let server = try NATSServerProcess()
        weak var subscriptionToken: Token?
        weak var eventToken: Token?
        do {
            let (forSubscription, forEvents) = (Token(), Token())
            (subscriptionToken, eventToken) = (forSubscription, forEvents)
            let connection = try NATSConnection(servers: [server.url], name: "test", events: { _ in _ = forEvents })
            try connection.subscribe("pinwheel.test.released") { _ in _ = forSubscription }
            connection.close()
        }
        // Released by the client's last callbacks (on-complete, closed), on its own threads.
        #expect(Self.eventually { subscriptionToken == nil && eventToken == nil })
    }

    /// A keyed append, waited for.
    static func appendKeyed(_ log: JetStreamChangeLog, _ changes: [Change], _ request: AppendRequest) throws
        -> AppendOutcome
    {
        let result = Mutex<Result<AppendOutcome, ChangeLogError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        log.append(changes, request: request) { r in
            result.withLock { $0 = r }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    @Test("a retry with the same key, on another node, is not applied again and answers the first version")
    func keyedRetryAppliedOnce() throws {
        let server = try NATSServerProcess()
        let (dirA, dirB) = (Directory(), Directory())
        let a = try JetStreamChangeLog(options: Self.options(server, dirA))
        let b = try JetStreamChangeLog(options: Self.options(server, dirB))
        let (seenA, seenB) = (Replayed(), Replayed())
        _ = try a.open(after: 0) { seenA.add($0) }
        _ = try b.open(after: 0) { seenB.add($0) }
        let first = try Self.appendKeyed(a, [FileChangeLogTests.change(1)], AppendRequest(key: "producer-7"))
        _ = try Self.appendAndWait(b, [FileChangeLogTests.change(2), FileChangeLogTests.change(3)])
        let retry = try Self.appendKeyed(b, [FileChangeLogTests.change(1)], AppendRequest(key: "producer-7"))
        let again = try Self.appendKeyed(a, [FileChangeLogTests.change(1)], AppendRequest(key: "producer-7"))
        #expect(first == .appended(1))
        #expect(retry == .duplicate(1))
        #expect(again == .duplicate(1))
        #expect(Self.eventually { seenA.changes.count == 3 && seenB.changes.count == 3 })
        a.close()
        b.close()
    }

    @Test("the stream remembers message ids for the log's duplicate window, also one made before with another")
    func duplicateWindowSet() throws {
        let server = try NATSServerProcess()
        var options = Self.options(server, Directory())
        options.duplicateWindow = .seconds(30)
        let made = try JetStreamChangeLog(options: options)
        let admin = try NATSConnection(servers: [server.url], name: "test")
        #expect(try admin.duplicateWindow(options.stream) == .seconds(30))
        made.close()
        options.duplicateWindow = .seconds(120)
        let later = try JetStreamChangeLog(options: options)
        #expect(try admin.duplicateWindow(options.stream) == .seconds(120))
        later.close()
        admin.close()
    }

    @Test("an append whose request expired before it left is dropped, and nothing reaches the stream")
    func expiredDropped() throws {
        let server = try NATSServerProcess()
        let dir = Directory()
        let log = try JetStreamChangeLog(options: Self.options(server, dir))
        let seen = Replayed()
        _ = try log.open(after: 0) { seen.add($0) }
        let outcome = try Self.appendKeyed(
            log, [FileChangeLogTests.change(1)], AppendRequest(key: "late") { "its deadline passed" })
        #expect(outcome == .dropped("its deadline passed"))
        #expect(try Self.appendAndWait(log, [FileChangeLogTests.change(2)]) == 1)
        #expect(seen.changes.count == 1)
        log.close()
    }

    @Test("a NATS server that stops answering is noticed within seconds, reported, and forgotten once it answers")
    func hungServerNoticed() throws {
        let server = try NATSServerProcess()
        let events = Mutex<[String]>([])
        var options = Self.options(server, Directory())
        options.connectionEvents = { event in events.withLock { $0.append(event) } }
        let log = try JetStreamChangeLog(options: options)
        _ = try log.open(after: 0) { _ in }
        #expect(log.problem == nil)
        server.send(SIGSTOP)
        let stopped = ContinuousClock.now
        let noticed = Self.eventually { log.problem != nil }
        let after = ContinuousClock.now - stopped
        server.send(SIGCONT)
        #expect(noticed)
        #expect(after < .seconds(6))
        #expect(log.problem.map { $0.contains("not answering") } == true)
        #expect(events.withLock { $0.contains { $0.contains("not answering") } })
        #expect(log.metricsText.contains("pinwheel_nats_unanswered_total 1"))
        // Appends made while it is gone fail at once rather than wait in the client's buffer.
        #expect(Self.eventually { log.problem == nil })
        #expect(log.metricsText.contains("pinwheel_nats_connected 1"))
        #expect(try Self.appendAndWait(log, [FileChangeLogTests.change(1)]) == 1)
        log.close()
    }
}
