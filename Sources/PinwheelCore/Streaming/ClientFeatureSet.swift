/// What one client has on screen: for each feature id, the version it drew, its parent (so a later
/// merge can find the parent added in its place) and roughly where it is (so a later viewport can tell
/// whether it left the view).
///
/// Every feature has a slot in dense arrays (id, version, parent, position: 32 bytes), so a diff can
/// mark the slots it sees and sweep the unmarked ones in one pass. An open-addressing table of slots,
/// 4 bytes a bucket and at most three quarters full, finds a slot by id: about 40 bytes a feature,
/// where a `Dictionary` of entries took 60–110. Every active session holds one.
public struct ClientFeatureSet: Sendable {
    /// Stands for "no parent", keeping a parent 8 bytes.
    public static let noParent = FeatureID.max

    /// The ids the client has, densely, in no particular order: `slot(of: ids[s]) == s`.
    public private(set) var ids: [FeatureID] = []
    private var versions: [FeatureVersion] = []
    private var parents: [FeatureID] = []
    // Latitude at 2s, longitude at 2s + 1, in single precision: a metre is plenty to order removals.
    private var positions: [Float] = []
    // Linear probing over a power-of-two count of buckets: slot + 1, or 0 for an empty bucket.
    private var buckets: [UInt32] = []
    /// How the client receives features, which decides what counts as a new version (see
    /// ``Feature/version(_:)``).
    public let encoding: WireEncoding

    public init(encoding: WireEncoding = .json) {
        self.encoding = encoding
    }

    /// Features the client has.
    public var count: Int { ids.count }

    public func contains(_ id: FeatureID) -> Bool { slot(of: id) != nil }

    /// The feature's slot in ``ids``, nil if the client does not have it.
    public func slot(of id: FeatureID) -> Int? {
        guard !buckets.isEmpty else { return nil }
        return buckets.withUnsafeBufferPointer { table in
            let mask = table.count - 1
            var b = Self.home(id, mask: mask)
            while table[b] != 0 {
                let s = Int(table[b]) - 1
                if ids[s] == id { return s }
                b = (b + 1) & mask
            }
            return nil
        }
    }

    /// The version drawn in a slot (see ``slot(of:)``).
    public func version(atSlot slot: Int) -> FeatureVersion { versions[slot] }

    /// The version the client drew, nil if it does not have the feature.
    public func version(of id: FeatureID) -> FeatureVersion? { slot(of: id).map { versions[$0] } }

    /// The parent of a feature the client has, nil if none or unknown.
    public func parent(of id: FeatureID) -> FeatureID? {
        guard let s = slot(of: id), parents[s] != ClientFeatureSet.noParent else { return nil }
        return parents[s]
    }

    /// Where a feature the client has is drawn, to single precision; nil if it does not have it.
    public func position(of id: FeatureID) -> Coordinate? {
        slot(of: id).map { Coordinate(lat: Double(positions[2 * $0]), lon: Double(positions[2 * $0 + 1])) }
    }

    /// Records that the client now draws this feature (added or updated).
    public mutating func insert(_ f: Feature) {
        insert(id: f.id, version: f.version(encoding), parent: f.parent, lat: Float(f.lat), lon: Float(f.lon))
    }

    /// Records that the client draws a feature known only by id (held across a reconnect): its
    /// version, parent and position as far as they are known.
    public mutating func insert(id: FeatureID, version: FeatureVersion, parent: FeatureID?, lat: Float, lon: Float) {
        if let s = slot(of: id) {
            versions[s] = version
            parents[s] = parent ?? ClientFeatureSet.noParent
            positions[2 * s] = lat
            positions[2 * s + 1] = lon
            return
        }
        if (ids.count + 1) * 4 > buckets.count * 3 { rehash(buckets: max(16, buckets.count * 2)) }
        ids.append(id)
        versions.append(version)
        parents.append(parent ?? ClientFeatureSet.noParent)
        positions.append(lat)
        positions.append(lon)
        buckets[emptyBucket(for: id)] = UInt32(ids.count)
    }

    /// Records that the client removed a feature.
    public mutating func remove(_ id: FeatureID) {
        guard let gone = slot(of: id) else { return }
        clearBucket(bucket(ofSlot: gone))
        // Move the last feature into the freed slot.
        let last = ids.count - 1
        if gone < last {
            buckets[bucket(ofSlot: last)] = UInt32(gone + 1)
            ids[gone] = ids[last]
            versions[gone] = versions[last]
            parents[gone] = parents[last]
            positions[2 * gone] = positions[2 * last]
            positions[2 * gone + 1] = positions[2 * last + 1]
        }
        ids.removeLast()
        versions.removeLast()
        parents.removeLast()
        positions.removeLast(2)
        // A client whose view emptied gives the table back.
        if buckets.count > 16 && ids.count * 8 < buckets.count { rehash(buckets: max(16, buckets.count / 4)) }
    }

    /// Orders `removals` from the highest slot down and returns their slots. Removed in that order,
    /// each feature's slot is taken by the last one, which is never one still to remove, so the slots
    /// stay valid throughout and a client that mirrors the slots (a `pinwheel.v1+bin` decoder) can be
    /// told them instead of the ids. Ids the client does not have are dropped: there is nothing to
    /// remove.
    public func orderForRemoval(_ removals: inout [FeatureID]) -> [UInt32] {
        guard !removals.isEmpty else { return [] }
        var pairs: [(slot: UInt32, id: FeatureID)] = []
        pairs.reserveCapacity(removals.count)
        for id in removals {
            if let s = slot(of: id) { pairs.append((UInt32(s), id)) }
        }
        pairs.sort { $0.slot > $1.slot }
        // Written back in place: the caller's array has the room.
        removals.removeAll(keepingCapacity: true)
        var slots: [UInt32] = []
        slots.reserveCapacity(pairs.count)
        for (slot, id) in pairs {
            removals.append(id)
            slots.append(slot)
        }
        return slots
    }

    /// Applies a batch as the client will: removes, then updates, then adds.
    public mutating func apply(
        remove: some Sequence<FeatureID>, add: some Sequence<Feature>,
        update: some Sequence<Feature>
    ) {
        for id in remove { self.remove(id) }
        for f in update { insert(f) }
        for f in add { insert(f) }
    }

    // The first bucket an id probes: splitmix64's finaliser, as ids of nearby points are close.
    private static func home(_ id: FeatureID, mask: Int) -> Int {
        var z = id &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Int(truncatingIfNeeded: z ^ (z >> 31)) & mask
    }

    private func emptyBucket(for id: FeatureID) -> Int {
        let mask = buckets.count - 1
        var b = Self.home(id, mask: mask)
        while buckets[b] != 0 { b = (b + 1) & mask }
        return b
    }

    private func bucket(ofSlot s: Int) -> Int {
        let mask = buckets.count - 1
        var b = Self.home(ids[s], mask: mask)
        while Int(buckets[b]) != s + 1 { b = (b + 1) & mask }
        return b
    }

    // Empties bucket `b` and shifts back the entries after it that probed past it, so every lookup
    // still reaches its entry without tombstones.
    private mutating func clearBucket(_ b: Int) {
        let mask = buckets.count - 1
        var hole = b
        var next = (b + 1) & mask
        buckets[hole] = 0
        while buckets[next] != 0 {
            let home = Self.home(ids[Int(buckets[next]) - 1], mask: mask)
            // The entry at `next` may move into the hole unless its home lies cyclically in (hole, next].
            if (next - home) & mask >= (next - hole) & mask {
                buckets[hole] = buckets[next]
                buckets[next] = 0
                hole = next
            }
            next = (next + 1) & mask
        }
    }

    private mutating func rehash(buckets count: Int) {
        buckets = Array(repeating: 0, count: count)
        for s in ids.indices { buckets[emptyBucket(for: ids[s])] = UInt32(s + 1) }
    }
}

/// A digest of what a client draws for a feature: its count and position. Two features with the
/// same id and version look the same; a moved or recounted feature gets a new version.
public typealias FeatureVersion = UInt64

extension Feature {
    /// This feature's ``FeatureVersion``: a 64-bit mix of count, latitude, longitude and revision.
    public var version: FeatureVersion {
        // splitmix64's finaliser spreads every input bit over the result.
        func mix(_ x: UInt64) -> UInt64 {
            var z = x &+ 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        return mix(lat.bitPattern &+ mix(lon.bitPattern &+ mix(UInt64(count) | UInt64(revision) << 32)))
    }

    /// This feature's version as a client on `encoding` draws it. A JSON session is sent any change of
    /// position, even one finer than the 7 decimals it is written to, so that is ``version``;
    /// `pinwheel.v1+bin` carries a cluster's on its ``BinaryGrid``, so a cluster whose centroid moved
    /// less than a 32nd of a pixel at its zoom (a few changes among its thousands of points) keeps its
    /// version and is not sent again. A point's grid is 11 cm: a point moving less is rare, and it
    /// keeps ``version``, which costs a diff less.
    public func version(_ encoding: WireEncoding) -> FeatureVersion {
        guard encoding == .binary, id >> 32 != 0 else { return version }
        let unit = BinaryGrid.unit(of: id)
        var onGrid = self
        onGrid.lat = Double(BinaryGrid.multiple(lat, unit: unit, limit: BinaryGrid.latLimit))
        onGrid.lon = Double(BinaryGrid.multiple(lon, unit: unit, limit: BinaryGrid.lonLimit))
        return onGrid.version
    }
}

extension Feature {
    /// A 32-bit digest of how a client draws this feature: FNV-1a-style over its count and its
    /// fixed-point position, each as a 32-bit integer. Clients compute the same from the numbers they
    /// received (`featureDigest` in web/pinwheel/client.js), so after a reconnect a held feature whose
    /// digest matches needs nothing re-sent.
    /// - Parameter encoding: what the client received: JSON carries the position rounded to 1e-7°,
    ///   `pinwheel.v1+bin` on the feature's ``BinaryGrid``.
    public func digest(_ encoding: WireEncoding = .json) -> UInt32 {
        let unit = encoding == .binary ? BinaryGrid.unit(of: id) : 1
        let fixedLat = BinaryGrid.fixed(lat, unit: unit, limit: BinaryGrid.latLimit)
        let fixedLon = BinaryGrid.fixed(lon, unit: unit, limit: BinaryGrid.lonLimit)
        var h: UInt32 = 0x811C_9DC5
        for v in [count, UInt32(truncatingIfNeeded: fixedLat), UInt32(truncatingIfNeeded: fixedLon)] {
            h = (h ^ v) &* 0x0100_0193
        }
        return h
    }
}
