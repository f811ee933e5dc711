/// Writes `batch` and `expansion` in `pinwheel.v1+bin` (docs/protocol.md, "Binary encoding") into one
/// reused buffer: the same messages ``MessageEncoder`` writes as JSON, from the same inputs.
///
/// Like ``MessageEncoder``, the buffer starts with `headroom` bytes the encoder never touches
/// (libwebsockets' `LWS_PRE`), so a transport sends `framed` as it is.
public struct BinaryMessageEncoder: Sendable {
    /// The message type in bits 0–1 of the first byte: `batch`.
    public static let batchType: UInt8 = 1
    /// The message type in bits 0–1 of the first byte: `expansion`.
    public static let expansionType: UInt8 = 2

    /// Flags of a batch's first byte.
    enum BatchFlag {
        static let done: UInt8 = 1 << 2
        static let capped: UInt8 = 1 << 3
        static let remove: UInt8 = 1 << 4
        static let add: UInt8 = 1 << 5
        static let update: UInt8 = 1 << 6
        static let version: UInt8 = 1 << 7
    }

    /// Flags of a feature's flag byte, written when any is set.
    enum FeatureFlag {
        /// A point's count is written (it is not 1).
        static let count: UInt8 = 1 << 0
        static let anchor: UInt8 = 1 << 1
        static let key: UInt8 = 1 << 2
        static let properties: UInt8 = 1 << 3
        static let aggregates: UInt8 = 1 << 4
        static let groups: UInt8 = 1 << 5
        static let flags: UInt8 = 1 << 6
    }

    /// An expansion's flag: `spread` follows, not `zoom`.
    static let spreadFlag: UInt8 = 1 << 2

    /// The buffer; the message follows the headroom.
    public var writer: BinaryWriter
    /// Bytes reserved before each message.
    public let headroom: Int

    // The running state, carried from message to message of a session as its client's decoder
    // carries it: the last batch's seq and number, the last id's tag (high 32 bits) and low part, the
    // last feature's fixed-point position, the last parent's tag. The names defined so far, with
    // their table index, are the message's own.
    private var seq: UInt64 = 0
    private var number: UInt64 = 0
    private var tag: UInt64 = 0
    private var low: Int64 = 0
    private var lat: Int64 = 0
    private var lon: Int64 = 0
    private var parentTag: UInt64 = 0
    private var names: [String: UInt64] = [:]
    /// A cluster's contents counts, reused from feature to feature.
    private var counts: [Int32] = []

    public init(headroom: Int = 0, capacity: Int = 16 * 1024) {
        self.headroom = headroom
        writer = BinaryWriter(capacity: capacity)
        begin()
    }

    /// The last encoded message.
    public var message: ArraySlice<UInt8> { writer.bytes[headroom...] }

    /// The last encoded message behind its headroom, in a buffer of its own.
    public var framed: [UInt8] {
        // Exactly the message's bytes, as MessageEncoder's: the buffer is reused for the next one.
        writer.bytes.withUnsafeBufferPointer { [UInt8]($0) }
    }

    private mutating func begin() {
        writer.reset()
        writer.bytes.append(contentsOf: repeatElement(0, count: headroom))
        names.removeAll(keepingCapacity: true)
    }

    /// Encodes `batch`; the parameters are ``MessageEncoder``'s but for the removals, which the client
    /// finds by slot (see ``PacedBatch/removeSlots``).
    /// - Parameters:
    ///   - removeSlots: the removed features' slots, descending, each below `held`.
    ///   - held: how many features the client holds before the batch.
    public mutating func batch(
        seq: UInt64, number: UInt64, removeSlots: some Collection<UInt32>, held: Int,
        add: some Collection<Feature>, update: some Collection<Feature>, done: Bool,
        capped: BatchMessage.Capped? = nil, version: UInt64 = 0, context: FeatureContext
    ) {
        begin()
        var first = Self.batchType
        if done { first |= BatchFlag.done }
        if capped != nil { first |= BatchFlag.capped }
        if !removeSlots.isEmpty { first |= BatchFlag.remove }
        if !add.isEmpty { first |= BatchFlag.add }
        if !update.isEmpty { first |= BatchFlag.update }
        if version != 0 { first |= BatchFlag.version }
        writer.byte(first)
        // A session's batches count up by one, and their seq stays or grows a little.
        writer.zigzag(Int64(bitPattern: seq &- self.seq))
        writer.zigzag(Int64(bitPattern: number &- self.number &- 1))
        self.seq = seq
        self.number = number
        if version != 0 { writer.varint(version) }
        if let capped {
            writer.varint(UInt64(max(0, capped.limit)))
            writer.varint(UInt64(max(0, capped.available)))
        }
        if !removeSlots.isEmpty {
            writer.varint(UInt64(removeSlots.count))
            // Each as its distance below the one before, the first below the count held.
            var above = UInt32(held)
            for slot in removeSlots {
                writer.varint(UInt64(above - 1 - slot))
                above = slot
            }
        }
        if !add.isEmpty { features(add, context) }
        if !update.isEmpty { features(update, context) }
    }

    /// Encodes a ``PacedBatch`` from the pacer.
    public mutating func batch(
        _ b: PacedBatch, capped: BatchMessage.Capped? = nil, version: UInt64 = 0, context: FeatureContext
    ) {
        batch(
            seq: b.seq, number: b.number, removeSlots: b.removeSlots, held: b.held, add: b.add, update: b.update,
            done: b.done, capped: capped, version: version, context: context)
    }

    /// Encodes `expansion`: the zoom at which a cluster splits, or the spread of a same-coordinate group.
    public mutating func expansion(id: FeatureID, _ expansion: Expansion, context: FeatureContext) {
        begin()
        switch expansion {
        case .zoom(let z):
            writer.byte(Self.expansionType)
            self.id(id)
            writer.f64(z)
        case .spread(let members):
            writer.byte(Self.expansionType | Self.spreadFlag)
            self.id(id)
            features(members, context)
        }
    }

    /// A count, then the features.
    private mutating func features(_ list: some Collection<Feature>, _ context: FeatureContext) {
        writer.varint(UInt64(list.count))
        for f in list { feature(f, context) }
    }

    /// An id relative to the previous one: its low part as a zigzag difference, its tag only when it changed.
    private mutating func id(_ id: FeatureID) {
        let (value, newTag) = relative(id)
        writer.varint(value)
        if let newTag { writer.varint(newTag) }
    }

    /// `2 × zigzag(low − previous low) + t` and, when `t` is 1, the new tag; `id` becomes the previous id.
    private mutating func relative(_ id: FeatureID) -> (value: UInt64, newTag: UInt64?) {
        let newTag = id >> 32
        let newLow = Int64(id & 0xFFFF_FFFF)
        let changed = newTag != tag
        let value = BinaryWriter.zigzag(newLow - low) << 1 | (changed ? 1 : 0)
        tag = newTag
        low = newLow
        return (value, changed ? newTag : nil)
    }

    /// A property or aggregate name: its index once the message defined it, else defined here.
    private mutating func name(_ name: String) {
        if let index = names[name] {
            writer.varint(index)
        } else {
            let index = UInt64(names.count)
            names[name] = index
            writer.varint(index)
            writer.string(name)
        }
    }

    private mutating func feature(_ f: Feature, _ context: FeatureContext) {
        let key = context.key(of: f)
        let properties = context.properties(of: f)
        // Written only when a value is: the JSON form leaves out empty values, and `properties` with them.
        let propertyCount =
            properties.map { p in
                p.values.indices.count { $0 - p.values.startIndex < p.columns.count && p.values[$0] != nil }
            } ?? 0
        let hasAggregates = !f.isPoint && !context.aggregates.isEmpty
        let idLow = f.id & 0xFFFF_FFFF
        var parentMode: UInt64 = 0
        if let parent = f.parent {
            // Its own id; the id's low part under the running parent tag; or written out.
            parentMode = parent == f.id ? 1 : parent & 0xFFFF_FFFF == idLow && parent >> 32 == parentTag ? 2 : 3
        }
        // A cluster's count is always written, a point's only when it is not 1.
        let countWritten = f.id >> 32 != 0 || f.count != 1
        var flags: UInt8 = 0
        if countWritten && f.id >> 32 == 0 { flags |= FeatureFlag.count }
        if f.anchor != nil { flags |= FeatureFlag.anchor }
        if key != nil { flags |= FeatureFlag.key }
        if propertyCount > 0 { flags |= FeatureFlag.properties }
        if hasAggregates { flags |= FeatureFlag.aggregates }
        let hasCounts = context.counts(of: f, into: &counts)
        // Written only when a value has a count, so the list is never empty.
        let hasGroups = hasCounts && counts.prefix(context.contents.groupSlots).contains { $0 > 0 }
        if hasGroups { flags |= FeatureFlag.groups }
        if hasCounts && !context.contents.flags.isEmpty { flags |= FeatureFlag.flags }
        let (idValue, newTag) = relative(f.id)
        writer.varint(idValue << 3 | parentMode << 1 | (flags != 0 ? 1 : 0))
        if let newTag { writer.varint(newTag) }
        if flags != 0 { writer.byte(flags) }
        let unit = BinaryGrid.unit(of: f.id)
        let latSteps = BinaryGrid.multiple(f.lat, unit: unit, limit: BinaryGrid.latLimit)
        let lonSteps = BinaryGrid.multiple(f.lon, unit: unit, limit: BinaryGrid.lonLimit)
        writer.zigzag(latSteps - BinaryGrid.steps(lat, unit: unit))
        writer.zigzag(lonSteps - BinaryGrid.steps(lon, unit: unit))
        let fixedLat = latSteps * unit
        let fixedLon = lonSteps * unit
        lat = fixedLat
        lon = fixedLon
        if countWritten { writer.varint(UInt64(f.count)) }
        if let parent = f.parent, parentMode == 3 {
            // Like an id, relative to the feature's own low part and the running parent tag.
            let newTag = parent >> 32
            let changed: UInt64 = newTag != parentTag ? 1 : 0
            writer.varint(BinaryWriter.zigzag(Int64(parent & 0xFFFF_FFFF) - Int64(idLow)) << 1 | changed)
            if changed == 1 { writer.varint(newTag) }
            parentTag = newTag
        }
        if let anchor = f.anchor {
            // On the feature's grid, relative to its position.
            writer.zigzag((BinaryGrid.fixed(anchor.lat, unit: unit, limit: BinaryGrid.latLimit) - fixedLat) / unit)
            writer.zigzag((BinaryGrid.fixed(anchor.lon, unit: unit, limit: BinaryGrid.lonLimit) - fixedLon) / unit)
        }
        if let key { writer.string(key) }
        if propertyCount > 0, let (columns, values) = properties {
            writer.varint(UInt64(propertyCount))
            for (c, value) in values.enumerated() where c < columns.count {
                guard let value else { continue }
                name(columns[c])
                // A tag, then the value: 0 a string, 1 an f64, 2 false, 3 true.
                switch value {
                case .string(let s):
                    writer.byte(0)
                    writer.string(s)
                case .number(let d):
                    writer.byte(1)
                    writer.f64(d)
                case .bool(let b): writer.byte(b ? 3 : 2)
                }
            }
        }
        if hasAggregates {
            let values = context.values(f)
            writer.varint(UInt64(context.aggregates.count))
            for c in context.aggregates.indices {
                name(context.aggregates[c].name)
                writer.f64(context.aggregate(c, reduced: values, count: f.count))
            }
        }
        if hasCounts { contents(context.contents, groups: hasGroups) }
    }

    /// A cluster's counts per value, in the shorter of two forms; in both the last present value's
    /// count is left out, being what the others leave of the cluster's.
    /// - A list: each present value as one varint, its count times 16 plus its index's step from the
    ///   previous one (1 to 13: ``ClusterContents/maxValues`` and "other"), the last one's count 0.
    /// - A mask, for clusters holding many values in large numbers: one varint, the present values'
    ///   bits times 16 (step 0 marks the form), then the counts as varints.
    private mutating func breakdown(_ groups: Int) {
        var last = groups - 1
        while last > 0 && counts[last] == 0 { last -= 1 }
        var mask: UInt64 = 0
        var listBytes = 0
        var maskBytes = 0
        var previous = -1
        for v in 0..<groups where counts[v] > 0 {
            mask |= 1 << v
            let count = v == last ? 0 : UInt64(counts[v])
            listBytes += BinaryWriter.varintLength(count << 4 | UInt64(v - previous))
            if v != last { maskBytes += BinaryWriter.varintLength(count) }
            previous = v
        }
        maskBytes += BinaryWriter.varintLength(mask << 4)
        if maskBytes < listBytes {
            writer.varint(mask << 4)
            for v in 0..<last where counts[v] > 0 { writer.varint(UInt64(counts[v])) }
            return
        }
        previous = -1
        for v in 0..<groups where counts[v] > 0 {
            let count = v == last ? 0 : UInt64(counts[v])
            writer.varint(count << 4 | UInt64(v - previous))
            previous = v
        }
    }

    /// A cluster's groups and flags from `counts` (docs/protocol.md, "A feature", items 10 and 11).
    private mutating func contents(_ contents: ClusterContents, groups written: Bool) {
        let groups = contents.groupSlots
        if written { breakdown(groups) }
        if !contents.flags.isEmpty {
            writer.varint(UInt64(contents.flags.count))
            for k in contents.flags.indices { writer.varint(UInt64(max(0, counts[groups + k]))) }
        }
    }
}
