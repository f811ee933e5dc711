import PinwheelCore

/// Presence across nodes: each node announces its own sessions' viewports (the `maxShown` most
/// recent) to the others, at most once per `interval` and again every ``announceEvery`` while it
/// has any; a node not heard from for ``remoteLifetime`` vanishes from the next messages. Sessions
/// of another node are named `<node>-<session>`, so names stay unique across the cluster.
extension PresenceBoard {
    /// Another node's sessions as it last announced them.
    struct RemoteNode {
        var viewports: [PresenceViewport]
        /// The board's version when the announcement arrived: its place among the most recent.
        var stamp: UInt64
        var heard: ContinuousClock.Instant
    }

    /// A node with sessions announces them again this often, even unchanged.
    static let announceEvery: Duration = .seconds(1)
    /// A node not heard from for this long is forgotten (it stopped, or lost its NATS connection).
    static let remoteLifetime: Duration = .seconds(3)
    private static let announcementFormat: UInt8 = 1

    /// This node's sessions for the others, or nil when there is nothing new to say yet: nothing
    /// changed since the last announcement and ``announceEvery`` has not passed (or there are none).
    /// - Parameter node: this node's name in the cluster.
    func announcement(node: String, now: ContinuousClock.Instant = .now) -> [UInt8]? {
        state.withLock { s -> [UInt8]? in
            if let last = s.announced {
                let changed = last.version != s.localVersion
                guard changed || (!s.entries.isEmpty && now - last.at >= Self.announceEvery) else { return nil }
            } else if s.entries.isEmpty {
                return nil
            }
            s.announced = (s.localVersion, now)
            let recent = s.entries.sorted { $0.value.stamp > $1.value.stamp }.prefix(maxShown)
            var w = ByteWriter()
            w.u8(Self.announcementFormat)
            w.string(node)
            w.u16(UInt16(recent.count))
            for (connection, entry) in recent {
                w.string("\(node)-\(String(connection.rawValue, radix: 16))")
                w.f64(entry.bbox.west)
                w.f64(entry.bbox.south)
                w.f64(entry.bbox.east)
                w.f64(entry.bbox.north)
                w.f64(entry.zoom)
            }
            return w.bytes
        }
    }

    /// Takes in another node's announcement; ignores this node's own and bytes that are not one.
    /// - Returns: false when the bytes were not an announcement.
    @discardableResult
    func receive(announcement bytes: [UInt8], from us: String, now: ContinuousClock.Instant = .now) -> Bool {
        var r = ByteReader(bytes[...])
        var viewports: [PresenceViewport] = []
        let node: String
        do throws(ByteReader.Failure) {
            guard try r.u8() == Self.announcementFormat else { return false }
            node = try r.string()
            let count = Int(try r.u16())
            guard count <= maxShown else { return false }
            for _ in 0..<count {
                let session = try r.string()
                let bbox = BBox(west: try r.f64(), south: try r.f64(), east: try r.f64(), north: try r.f64())
                viewports.append(PresenceViewport(session: session, bbox: bbox, zoom: try r.f64()))
            }
        } catch {
            return false
        }
        guard node != us else { return true }
        state.withLock { s in
            s.version += 1
            if viewports.isEmpty {
                s.nodes[node] = nil
            } else {
                s.nodes[node] = RemoteNode(viewports: viewports, stamp: s.version, heard: now)
            }
        }
        return true
    }

    /// Drops the nodes not heard from for ``remoteLifetime``.
    static func forgetSilentNodes(_ s: inout State, now: ContinuousClock.Instant) {
        let silent = s.nodes.filter { now - $0.value.heard > remoteLifetime }.keys
        guard !silent.isEmpty else { return }
        for node in silent { s.nodes[node] = nil }
        s.version += 1
    }
}
