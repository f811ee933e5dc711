import Foundation
import PinwheelCore
import PinwheelTransport
import Synchronization

/// Where every session is looking, shared with the sessions that opted in (`settings` with
/// `"presence":true`): the multi-client demo draws the other people's viewports as outlines.
///
/// Sessions report each viewport they are served with `update`; a thread of the board sends each
/// watcher a `presence` message at most once per `interval`, and only when something changed, with
/// the `maxShown` most recently moved other sessions. A session that closes is `remove`d and
/// vanishes from the next message. Sessions are named as `hello` names them: the connection id in
/// hexadecimal. Every method is safe from any thread.
public final class PresenceBoard: Sendable {
    /// One session's last viewport.
    struct Entry {
        var bbox: BBox
        var zoom: Double
        /// Order of the last update; larger is more recent.
        var stamp: UInt64
    }

    struct State {
        var entries: [ConnectionID: Entry] = [:]
        /// Opted-in sessions and the board's version each last got a message for.
        var watchers: [ConnectionID: UInt64] = [:]
        /// Bumped by every change to `entries` or `nodes`.
        var version: UInt64 = 1
        var stopping = false
        /// Other nodes' sessions, by node (see PresenceBoard+Nodes.swift).
        var nodes: [String: RemoteNode] = [:]
        /// Bumped by every change to `entries` alone: what other nodes are told about.
        var localVersion: UInt64 = 1
        /// The local version last announced to other nodes, and when.
        var announced: (version: UInt64, at: ContinuousClock.Instant)?
    }

    /// Most other sessions one message shows.
    public let maxShown: Int
    /// Shortest time between two messages to one watcher.
    public let interval: Duration
    let state = Mutex(State())
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    public init(maxShown: Int = 100, interval: Duration = .milliseconds(250)) {
        self.maxShown = maxShown
        self.interval = interval
    }

    /// Starts the thread that sends the messages through `send` (the transport's thread-safe send).
    public func start(send: @escaping @Sendable (ConnectionID, [UInt8]) -> Void) {
        guard !started.exchange(true, ordering: .sequentiallyConsistent) else { return }
        let thread = Thread { [self] in
            let seconds = Double(interval.components.seconds) + Double(interval.components.attoseconds) * 1e-18
            while !state.withLock({ $0.stopping }) {
                for (connection, message) in round() { send(connection, message) }
                Thread.sleep(forTimeInterval: seconds)
            }
            finished.signal()
        }
        thread.name = "pinwheel-presence"
        thread.start()
    }

    /// Ends the thread; any thread but that one.
    public func stop() {
        state.withLock { $0.stopping = true }
        if started.load(ordering: .sequentiallyConsistent) { finished.wait() }
    }

    /// Records the viewport the session on `connection` is being served.
    public func update(connection: ConnectionID, bbox: BBox, zoom: Double) {
        state.withLock { s in
            s.version += 1
            s.localVersion += 1
            s.entries[connection] = Entry(bbox: bbox, zoom: zoom, stamp: s.version)
        }
    }

    /// Forgets a session that closed: out of every later message, and no longer a watcher.
    public func remove(connection: ConnectionID) {
        state.withLock { s in
            if s.entries.removeValue(forKey: connection) != nil {
                s.version += 1
                s.localVersion += 1
            }
            s.watchers[connection] = nil
        }
    }

    /// Opts the session on `connection` in to presence messages, or out.
    public func watch(connection: ConnectionID, enabled: Bool) {
        state.withLock { s in
            s.watchers[connection] = enabled ? 0 : nil
        }
    }

    /// Sessions shown to watchers right now (for `/metrics` and tests).
    public var sessionCount: Int { state.withLock { $0.entries.count } }

    /// One round: a message for every watcher that has not seen the latest version. Other nodes'
    /// sessions not announced again within ``remoteLifetime`` are dropped first.
    func round(now: ContinuousClock.Instant = .now) -> [(ConnectionID, [UInt8])] {
        state.withLock { s in
            Self.forgetSilentNodes(&s, now: now)
            let due = s.watchers.filter { $0.value < s.version }
            guard !due.isEmpty else { return [] }
            // The most recent maxShown + 1 entries, so each watcher still gets maxShown after leaving
            // itself out; each entry is encoded once for every watcher. Other nodes' sessions are never
            // the watcher itself (their owner is nil).
            var candidates: [(owner: ConnectionID?, stamp: UInt64, viewport: PresenceViewport)] = []
            for (connection, entry) in s.entries {
                let viewport = PresenceViewport(
                    session: String(connection.rawValue, radix: 16), bbox: entry.bbox, zoom: entry.zoom)
                candidates.append((connection, entry.stamp, viewport))
            }
            for node in s.nodes.values {
                for viewport in node.viewports { candidates.append((nil, node.stamp, viewport)) }
            }
            let recent = candidates.sorted { $0.stamp > $1.stamp }.prefix(maxShown + 1)
            var fragments: [(connection: ConnectionID?, json: [UInt8])] = []
            var writer = JSONWriter(capacity: 128)
            for candidate in recent {
                PresenceEncoding.entry(candidate.viewport, into: &writer)
                fragments.append((candidate.owner, writer.bytes))
            }
            var messages: [(ConnectionID, [UInt8])] = []
            for connection in due.keys {
                let shown = fragments.lazy.filter { $0.connection != connection }.prefix(maxShown).map(\.json)
                messages.append((connection, PresenceEncoding.message(shown)))
                s.watchers[connection] = s.version
            }
            return messages
        }
    }
}
