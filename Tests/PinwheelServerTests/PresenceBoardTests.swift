import PinwheelCore
import PinwheelTestSupport
import PinwheelTransport
import Synchronization
import Testing

@testable import PinwheelServer

@Suite("PresenceBoard: other sessions' viewports for the multi-client demo")
struct PresenceBoardTests {
    static let box = BBox(west: 2, south: 48, east: 3, north: 49)

    /// The sessions each connection's message shows, in the order shown.
    static func shown(_ round: [(ConnectionID, [UInt8])]) throws -> [ConnectionID: [String]] {
        var result: [ConnectionID: [String]] = [:]
        for (connection, bytes) in round {
            guard case .object(let message) = try JSONReader.parse(bytes), message["type"] == .string("presence"),
                case .array(let viewports)? = message["viewports"]
            else {
                Issue.record("not a presence message: \(String(decoding: bytes, as: UTF8.self))")
                continue
            }
            result[connection] = viewports.compactMap { v in
                guard case .object(let o) = v, case .string(let s)? = o["session"] else { return nil }
                #expect(o["bbox"] == .array([.number(2), .number(48), .number(3), .number(49)]))
                return s
            }
        }
        return result
    }

    static let a = ConnectionID(rawValue: 0xa)
    static let b = ConnectionID(rawValue: 0xb)
    static let c = ConnectionID(rawValue: 0xc)

    @Test("a watcher sees the other sessions (named as hello names them) but not itself; others get nothing")
    func othersOnly() throws {
        let board = PresenceBoard()
        board.update(connection: Self.a, bbox: Self.box, zoom: 5)
        board.update(connection: Self.b, bbox: Self.box, zoom: 6)
        board.update(connection: Self.c, bbox: Self.box, zoom: 7)
        board.watch(connection: Self.a, enabled: true)
        #expect(try Self.shown(board.round()) == [Self.a: ["c", "b"]])
    }

    @Test("nothing is sent again until something changes; a closed session vanishes from the next message")
    func changesOnly() throws {
        let board = PresenceBoard()
        board.update(connection: Self.a, bbox: Self.box, zoom: 5)
        board.update(connection: Self.b, bbox: Self.box, zoom: 6)
        board.watch(connection: Self.b, enabled: true)
        #expect(try Self.shown(board.round()) == [Self.b: ["a"]])
        #expect(board.round().isEmpty)
        board.remove(connection: Self.a)
        #expect(try Self.shown(board.round()) == [Self.b: []])
        board.watch(connection: Self.b, enabled: false)
        board.update(connection: Self.c, bbox: Self.box, zoom: 1)
        #expect(board.round().isEmpty)
    }

    @Test("at most maxShown sessions are shown, the most recently moved first")
    func capped() throws {
        let board = PresenceBoard(maxShown: 100)
        for k in 1...250 { board.update(connection: ConnectionID(rawValue: UInt64(k)), bbox: Self.box, zoom: 3) }
        board.watch(connection: ConnectionID(rawValue: 250), enabled: true)
        board.watch(connection: ConnectionID(rawValue: 1), enabled: true)
        let shown = try Self.shown(board.round())
        let hex = { (k: Int) in String(k, radix: 16) }
        #expect(shown[ConnectionID(rawValue: 250)] == (150..<250).reversed().map(hex))
        #expect(shown[ConnectionID(rawValue: 1)] == (151...250).reversed().map(hex))
        #expect(board.sessionCount == 250)
    }

    @Test("the board's thread sends through the given function and stops")
    func thread() {
        let board = PresenceBoard(interval: .milliseconds(10))
        let sent = Mutex<[ConnectionID]>([])
        board.start { connection, _ in sent.withLock { $0.append(connection) } }
        board.update(connection: Self.a, bbox: Self.box, zoom: 5)
        board.watch(connection: Self.b, enabled: true)
        #expect(eventually { sent.withLock { $0 } == [Self.b] })
        board.stop()
    }

    @Test("settings opt in to presence, with or without an algorithm, and encode back the same")
    func settings() throws {
        #expect(
            try ClientMessage.decode(#"{"type":"settings","presence":true}"#)
                == .settings(SettingsMessage(presence: true)))
        let both = ClientMessage.settings(SettingsMessage(algorithm: .pcaTree, presence: false))
        #expect(try ClientMessage.decode(both.json) == both)
        #expect(throws: WireError.self) { try ClientMessage.decode(#"{"type":"settings"}"#) }
        #expect(throws: WireError.self) { try ClientMessage.decode(#"{"type":"settings","presence":"yes"}"#) }
    }
}
