/// What one client has on screen: for each feature id, the version it drew, its parent (so a later
/// merge can find the parent added in its place) and roughly where it is (so a later viewport can tell
/// whether it left the view).
///
/// Besides the map from id, every feature has a slot in a dense array of ids, so a diff can mark the
/// slots it sees and sweep the unmarked ones in one pass instead of probing a second hash table in
/// the first one's order (which degrades badly once tables pass a few thousand entries).
public struct ClientFeatureSet: Sendable {
    /// The version of a feature as drawn, its parent (``ClientFeatureSet/noParent`` for none), its
    /// position in single precision (a metre is plenty to order removals) and its slot in ``ids``.
    public struct Entry: Hashable, Sendable {
        public var version: FeatureVersion
        public var parent: FeatureID
        public var lat: Float
        public var lon: Float
        public var slot: Int32
    }

    /// Stands for "no parent" in ``Entry/parent``, keeping the field 8 bytes.
    public static let noParent = FeatureID.max

    public private(set) var entries: [FeatureID: Entry] = [:]
    /// The ids the client has, densely, in no particular order: `entries[ids[s]]!.slot == s`.
    public private(set) var ids: [FeatureID] = []

    public init() {}

    /// Features the client has.
    public var count: Int { ids.count }

    public func contains(_ id: FeatureID) -> Bool { entries[id] != nil }

    /// The version the client drew, nil if it does not have the feature.
    public func version(of id: FeatureID) -> FeatureVersion? { entries[id]?.version }

    /// The parent of a feature the client has, nil if none or unknown.
    public func parent(of id: FeatureID) -> FeatureID? {
        guard let p = entries[id]?.parent, p != ClientFeatureSet.noParent else { return nil }
        return p
    }

    /// Where a feature the client has is drawn, to single precision; nil if it does not have it.
    public func position(of id: FeatureID) -> Coordinate? {
        entries[id].map { Coordinate(lat: Double($0.lat), lon: Double($0.lon)) }
    }

    /// Records that the client now draws this feature (added or updated).
    public mutating func insert(_ f: Feature) {
        let slot = entries[f.id]?.slot ?? Int32(ids.count)
        if slot == ids.count { ids.append(f.id) }
        entries[f.id] = Entry(
            version: f.version, parent: f.parent ?? ClientFeatureSet.noParent,
            lat: Float(f.lat), lon: Float(f.lon), slot: slot)
    }

    /// Records that the client draws a feature known only by id (held across a reconnect): its
    /// version, parent and position as far as they are known.
    public mutating func insert(id: FeatureID, version: FeatureVersion, parent: FeatureID?, lat: Float, lon: Float) {
        let slot = entries[id]?.slot ?? Int32(ids.count)
        if slot == ids.count { ids.append(id) }
        entries[id] = Entry(
            version: version, parent: parent ?? ClientFeatureSet.noParent, lat: lat, lon: lon, slot: slot)
    }

    /// Records that the client removed a feature.
    public mutating func remove(_ id: FeatureID) {
        guard let gone = entries.removeValue(forKey: id) else { return }
        // Move the last id into the freed slot.
        let last = ids.removeLast()
        if Int(gone.slot) < ids.count {
            ids[Int(gone.slot)] = last
            entries[last]!.slot = gone.slot
        }
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
}

extension Feature {
    /// A 32-bit digest of how a client draws this feature: FNV-1a-style over its count and its
    /// position rounded to 1e-7°, each as a 32-bit integer. Clients compute the same from the
    /// numbers they received (`featureDigest` in web/pinwheel/client.js), so after a reconnect a held
    /// feature whose digest matches needs nothing re-sent.
    public var digest: UInt32 {
        var h: UInt32 = 0x811C_9DC5
        h = (h ^ count) &* 0x0100_0193
        h = (h ^ UInt32(truncatingIfNeeded: Int64((lat * 1e7 + 0.5).rounded(.down)))) &* 0x0100_0193
        h = (h ^ UInt32(truncatingIfNeeded: Int64((lon * 1e7 + 0.5).rounded(.down)))) &* 0x0100_0193
        return h
    }
}
