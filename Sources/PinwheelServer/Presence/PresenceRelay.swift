import Foundation
import PinwheelCore
import Synchronization

/// Carries presence between the nodes of a cluster over a core NATS subject: this node's sessions go
/// out at most once per the board's `interval` (capped at its `maxShown`), and the other nodes'
/// come in and join the board. Core NATS delivers at most once and keeps nothing: presence is a
/// picture of now, and a lost announcement is replaced by the next one within a second.
public final class PresenceRelay: Sendable {
    public static let subject = "pinwheel.presence"

    private let board: PresenceBoard
    private let connection: NATSConnection
    /// This node's name in announcements.
    public let node: String
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    /// Connects to the NATS cluster; nothing is sent until ``start()``.
    /// - Throws: ``ChangeLogError/nats(function:reason:)`` when no server answers.
    public init(board: PresenceBoard, servers: [String], name: String) throws(ChangeLogError) {
        self.board = board
        connection = try NATSConnection(servers: servers, name: name)
        var random = SystemRandomNumberGenerator()
        node = String(random.next() % (1 << 40), radix: 36)
    }

    /// Listens to the other nodes and starts announcing this node's sessions.
    public func start() throws(ChangeLogError) {
        let node = node
        try connection.subscribe(Self.subject) { [board] message in
            board.receive(announcement: Array(message.data), from: node)
        }
        let thread = Thread { [self] in
            let seconds =
                Double(board.interval.components.seconds) + Double(board.interval.components.attoseconds) * 1e-18
            while !stopping.load(ordering: .acquiring) {
                // A failed publish (NATS unreachable for now) is simply retried at the next turn.
                if let bytes = board.announcement(node: node) { try? connection.publish(Self.subject, bytes) }
                Thread.sleep(forTimeInterval: seconds)
            }
            finished.signal()
        }
        thread.name = "pinwheel-presence-relay"
        thread.start()
    }

    /// Stops announcing and closes the connection; the other nodes forget this one's sessions within
    /// ``PresenceBoard/remoteLifetime``.
    public func stop() {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
        connection.close()
    }
}
