import PinwheelCore
import PinwheelTransport
import Testing

@testable import PinwheelServer

/// Presence between the nodes of a cluster, without the network: one board's announcement handed to
/// another, as the relay does over NATS, with a manual clock.
@Suite("PresenceBoard across nodes: announcements, caps and expiry")
struct PresenceAcrossNodesTests {
    static let box = PresenceBoardTests.box
    static let start = ContinuousClock.now

    @Test("a watcher sees the other node's sessions, named after that node, beside its own node's")
    func seesOtherNode() throws {
        let (here, there) = (PresenceBoard(), PresenceBoard())
        there.update(connection: ConnectionID(rawValue: 0x1f), bbox: Self.box, zoom: 4)
        here.update(connection: PresenceBoardTests.b, bbox: Self.box, zoom: 5)
        here.watch(connection: PresenceBoardTests.a, enabled: true)
        let bytes = try #require(there.announcement(node: "n2", now: Self.start))
        #expect(here.receive(announcement: bytes, from: "n1", now: Self.start))
        let shown = try PresenceBoardTests.shown(here.round(now: Self.start))
        #expect(shown == [PresenceBoardTests.a: ["n2-1f", "b"]])
    }

    @Test("a node announces only on change or once a second, never with nothing to say, at most maxShown sessions")
    func announcementsAreRateLimitedAndCapped() throws {
        let board = PresenceBoard(maxShown: 3)
        #expect(board.announcement(node: "n", now: Self.start) == nil)
        for k in 0..<10 { board.update(connection: ConnectionID(rawValue: UInt64(k)), bbox: Self.box, zoom: 3) }
        let first = board.announcement(node: "n", now: Self.start)
        #expect(first != nil)
        #expect(board.announcement(node: "n", now: Self.start + .milliseconds(500)) == nil)
        #expect(board.announcement(node: "n", now: Self.start + .seconds(1)) != nil)
        let other = PresenceBoard(maxShown: 3)
        other.watch(connection: PresenceBoardTests.a, enabled: true)
        other.receive(announcement: first!, from: "m", now: Self.start)
        #expect(
            try PresenceBoardTests.shown(other.round(now: Self.start))[PresenceBoardTests.a] == ["n-9", "n-8", "n-7"])
    }

    @Test("a node not heard from for three seconds vanishes; its own announcements are ignored")
    func silentNodesExpire() throws {
        let (here, there) = (PresenceBoard(), PresenceBoard())
        there.update(connection: PresenceBoardTests.c, bbox: Self.box, zoom: 4)
        here.watch(connection: PresenceBoardTests.a, enabled: true)
        let bytes = try #require(there.announcement(node: "n2", now: Self.start))
        here.receive(announcement: bytes, from: "n2", now: Self.start)
        #expect(try PresenceBoardTests.shown(here.round(now: Self.start)) == [PresenceBoardTests.a: []])
        here.receive(announcement: bytes, from: "n1", now: Self.start)
        #expect(try PresenceBoardTests.shown(here.round(now: Self.start)) == [PresenceBoardTests.a: ["n2-c"]])
        #expect(here.round(now: Self.start + .seconds(2)).isEmpty)
        #expect(try PresenceBoardTests.shown(here.round(now: Self.start + .seconds(4))) == [PresenceBoardTests.a: []])
    }

    @Test("bytes that are not an announcement change nothing")
    func garbageIgnored() {
        let board = PresenceBoard()
        #expect(!board.receive(announcement: [], from: "n"))
        #expect(!board.receive(announcement: [9, 1, 2], from: "n"))
        #expect(!board.receive(announcement: [1, 255, 255, 255, 255], from: "n"))
        #expect(board.state.withLock { $0.nodes.isEmpty })
    }
}
