/// Writes server messages into one reused buffer.
///
/// The buffer starts with `headroom` bytes the encoder never touches, so a transport that needs
/// space before the payload (libwebsockets' `LWS_PRE`) can send in place:
/// `encoder.writer.bytes[encoder.headroom...]` is the message.
public struct MessageEncoder: Sendable {
    /// The buffer; the message follows the headroom.
    public var writer: JSONWriter
    /// Bytes reserved before each message.
    public let headroom: Int
    /// A cluster's contents counts, reused from feature to feature.
    private var counts: [Int32] = []

    public init(headroom: Int = 0, capacity: Int = 64 * 1024) {
        self.headroom = headroom
        writer = JSONWriter(capacity: capacity)
        begin()
    }

    /// The last encoded message.
    public var message: ArraySlice<UInt8> { writer.bytes[headroom...] }

    /// The last encoded message behind its headroom, in a buffer of its own: what a transport that
    /// asked for the headroom sends as it is.
    public var framed: [UInt8] {
        // Exactly the message's bytes: `Array(writer.bytes)` would share the buffer, handing the
        // transport all its capacity and making the next message allocate a new one.
        writer.bytes.withUnsafeBufferPointer { [UInt8]($0) }
    }

    /// The last encoded message as text (tests, logs).
    public var text: String { String(decoding: message, as: UTF8.self) }

    mutating func begin() {
        writer.reset()
        writer.bytes.append(contentsOf: repeatElement(0, count: headroom))
    }

    /// Encodes `hello`.
    public mutating func hello(_ h: HelloMessage) {
        begin()
        writer.raw("{\"type\":\"hello\",\"protocol\":")
        writer.string(h.encoding.rawValue)
        writer.raw(",\"session\":")
        writer.string(h.session)
        writer.raw(",\"algorithm\":")
        writer.string(h.algorithm.rawValue)
        writer.raw(",\"algorithms\":")
        writer.strings(h.algorithms.map(\.rawValue))
        writer.raw(",\"dataset\":{\"name\":")
        writer.string(h.dataset.name)
        writer.raw(",\"points\":")
        writer.integer(h.dataset.points)
        writer.raw(",\"bounds\":")
        if let b = h.dataset.bounds {
            writer.bbox(b)
        } else {
            writer.null()
        }
        writer.raw(",\"unlocated\":")
        writer.integer(h.dataset.unlocated)
        writer.raw(",\"skipped\":")
        writer.integer(h.dataset.skipped)
        writer.raw(",\"aggregates\":[")
        for (c, a) in h.dataset.aggregates.enumerated() {
            if c > 0 { writer.byte(UInt8(ascii: ",")) }
            writer.raw("{\"name\":")
            writer.string(a.name)
            writer.raw(",\"op\":")
            writer.string(a.operation.rawValue)
            writer.raw(",\"column\":")
            writer.string(a.column)
            writer.byte(UInt8(ascii: "}"))
        }
        writer.byte(UInt8(ascii: "]"))
        let o = h.options
        writer.raw("},\"options\":{\"minZoom\":")
        writer.integer(o.minZoom)
        writer.raw(",\"maxZoom\":")
        writer.integer(o.maxZoom)
        writer.raw(",\"minPoints\":")
        writer.integer(o.minPoints)
        writer.raw(",\"radius\":")
        writer.number(o.radius)
        writer.raw(",\"extent\":")
        writer.integer(o.extent)
        writer.raw(",\"spread\":")
        writer.string(o.spread)
        writer.raw(",\"maxClusters\":")
        writer.integer(o.maxClusters)
        let l = h.limits
        writer.raw("},\"limits\":{\"viewportHz\":")
        writer.number(l.viewportHz)
        writer.raw(",\"pace\":")
        writer.number(l.pace)
        writer.raw(",\"window\":")
        writer.integer(l.window)
        writer.raw(",\"maxMessageBytes\":")
        writer.integer(l.maxMessageBytes)
        writer.raw(",\"maxZoom\":")
        writer.number(l.maxZoom)
        writer.raw(",\"maxPixels\":")
        writer.integer(l.maxPixels)
        writer.raw(",\"maxFeatures\":")
        writer.integer(l.maxFeatures)
        writer.raw("},\"groups\":")
        if let groups = h.groups {
            writer.raw("{\"column\":")
            writer.string(groups.column)
            writer.raw(",\"values\":")
            writer.strings(groups.values)
            writer.byte(UInt8(ascii: "}"))
        } else {
            writer.null()
        }
        writer.raw(",\"flags\":")
        writer.strings(h.flags)
        writer.byte(UInt8(ascii: "}"))
    }

    /// Encodes `batch`.
    /// - Parameters:
    ///   - seq: the viewport it serves.
    ///   - number: the session-wide batch number an `ack` names.
    ///   - remove: ids to remove; `add` and `update`: features to draw.
    ///   - done: true on the last batch for this viewport.
    ///   - capped: on the last batch of a viewport that had more features than the limit.
    ///   - version: the change-log version of the data the batch was computed from.
    ///   - context: where properties and aggregate values come from.
    public mutating func batch(
        seq: UInt64, number: UInt64, remove: some Collection<FeatureID>,
        add: some Collection<Feature>, update: some Collection<Feature>, done: Bool,
        capped: BatchMessage.Capped? = nil, version: UInt64 = 0, context: FeatureContext
    ) {
        begin()
        writer.raw("{\"type\":\"batch\",\"seq\":")
        writer.integer(seq)
        writer.raw(",\"batch\":")
        writer.integer(number)
        writer.raw(",\"remove\":[")
        var first = true
        for id in remove {
            if !first { writer.byte(UInt8(ascii: ",")) }
            first = false
            writer.integer(id)
        }
        writer.raw("],\"add\":")
        features(add, context)
        writer.raw(",\"update\":")
        features(update, context)
        writer.raw(",\"done\":")
        writer.bool(done)
        writer.raw(",\"version\":")
        writer.integer(version)
        if let capped {
            writer.raw(",\"capped\":{\"limit\":")
            writer.integer(capped.limit)
            writer.raw(",\"available\":")
            writer.integer(capped.available)
            writer.byte(UInt8(ascii: "}"))
        }
        writer.byte(UInt8(ascii: "}"))
    }

    /// Encodes a ``PacedBatch`` from the pacer.
    public mutating func batch(
        _ b: PacedBatch, capped: BatchMessage.Capped? = nil, version: UInt64 = 0, context: FeatureContext
    ) {
        batch(
            seq: b.seq, number: b.number, remove: b.remove, add: b.add, update: b.update, done: b.done,
            capped: capped, version: version, context: context)
    }

    /// Encodes `expansion`: the zoom at which a cluster splits, or the spread of a same-coordinate group.
    public mutating func expansion(id: FeatureID, _ expansion: Expansion, context: FeatureContext) {
        begin()
        writer.raw("{\"type\":\"expansion\",\"id\":")
        writer.integer(id)
        switch expansion {
        case .zoom(let z):
            writer.raw(",\"zoom\":")
            writer.number(z)
        case .spread(let members):
            writer.raw(",\"spread\":")
            features(members, context)
        }
        writer.byte(UInt8(ascii: "}"))
    }

    /// Encodes `children`, the answer to a `children` request: the features one zoom finer.
    public mutating func children(req: UInt64, id: FeatureID, _ list: [Feature], context: FeatureContext) {
        begin()
        writer.raw("{\"type\":\"children\",\"req\":")
        writer.integer(req)
        writer.raw(",\"id\":")
        writer.integer(id)
        writer.raw(",\"features\":")
        features(list, context)
        writer.byte(UInt8(ascii: "}"))
    }

    /// Encodes `leaves`, one page of a cluster's points.
    /// - Parameters:
    ///   - total: the points the cluster holds.
    ///   - next: the next page's cursor; nil after the last page.
    public mutating func leaves(
        req: UInt64, id: FeatureID, total: Int, _ points: [Feature], next: String?, context: FeatureContext
    ) {
        begin()
        writer.raw("{\"type\":\"leaves\",\"req\":")
        writer.integer(req)
        writer.raw(",\"id\":")
        writer.integer(id)
        writer.raw(",\"total\":")
        writer.integer(total)
        writer.raw(",\"points\":")
        features(points, context)
        writer.raw(",\"next\":")
        if let next { writer.string(next) } else { writer.null() }
        writer.byte(UInt8(ascii: "}"))
    }

    /// Encodes `pong`, the answer to a client's `ping`: a text frame in both encodings.
    public mutating func pong(id: UInt64) {
        begin()
        writer.raw("{\"type\":\"pong\",\"id\":")
        writer.integer(id)
        writer.byte(UInt8(ascii: "}"))
    }

    /// Encodes `error`.
    public mutating func error(_ e: WireError) {
        begin()
        writer.raw("{\"type\":\"error\",\"code\":")
        writer.string(e.code.rawValue)
        if let field = e.field {
            writer.raw(",\"field\":")
            writer.string(field)
        }
        writer.raw(",\"message\":")
        writer.string(e.message)
        if let retry = e.retryMs {
            writer.raw(",\"retryMs\":")
            writer.integer(retry)
        }
        if let req = e.req {
            writer.raw(",\"req\":")
            writer.integer(req)
        }
        writer.byte(UInt8(ascii: "}"))
    }

    mutating func features(_ list: some Collection<Feature>, _ context: FeatureContext) {
        writer.byte(UInt8(ascii: "["))
        var first = true
        for f in list {
            if !first { writer.byte(UInt8(ascii: ",")) }
            first = false
            feature(f, context)
        }
        writer.byte(UInt8(ascii: "]"))
    }

    /// One feature: id, lat, lon, count, then parent, anchor, properties and aggregates when they apply.
    /// A point's `properties`, each value of its type: missing values are left out (and `properties`
    /// with them when all are), since a column another point brought is not this point's property.
    private mutating func properties(columns: [String], values: ArraySlice<PropertyValue?>) {
        var first = true
        for (c, value) in values.enumerated() where c < columns.count {
            guard let value else { continue }
            writer.raw(first ? ",\"properties\":{" : ",")
            first = false
            writer.string(columns[c])
            writer.byte(UInt8(ascii: ":"))
            value.write(into: &writer)
        }
        if !first { writer.byte(UInt8(ascii: "}")) }
    }

    /// Writes `"lat":…,"lon":…` to 7 decimals, rounded as the `held` digest rounds them: a cluster's
    /// centroid or a spread pin has no short exact form, and its 17 digits would cost bytes and zlib
    /// time in every batch.
    mutating func position(_ c: Coordinate) {
        writer.raw("\"lat\":")
        writer.fixedPointDegrees(BinaryGrid.fixed(c.lat, unit: 1, limit: BinaryGrid.latLimit))
        writer.raw(",\"lon\":")
        writer.fixedPointDegrees(BinaryGrid.fixed(c.lon, unit: 1, limit: BinaryGrid.lonLimit))
    }

    mutating func feature(_ f: Feature, _ context: FeatureContext) {
        writer.raw("{\"id\":")
        writer.integer(f.id)
        writer.byte(UInt8(ascii: ","))
        position(Coordinate(lat: f.lat, lon: f.lon))
        writer.raw(",\"count\":")
        writer.integer(UInt64(f.count))
        if let parent = f.parent {
            writer.raw(",\"parent\":")
            writer.integer(parent)
        }
        if let anchor = f.anchor {
            writer.raw(",\"anchor\":{")
            position(anchor)
            writer.byte(UInt8(ascii: "}"))
        }
        if let name = context.key(of: f) {
            writer.raw(",\"key\":")
            writer.string(name)
        }
        if let (columns, values) = context.properties(of: f) {
            properties(columns: columns, values: values)
        }
        if !f.isPoint && !context.aggregates.isEmpty {
            let values = context.values(f)
            writer.raw(",\"aggregates\":{")
            for c in context.aggregates.indices {
                if c > 0 { writer.byte(UInt8(ascii: ",")) }
                writer.string(context.aggregates[c].name)
                writer.byte(UInt8(ascii: ":"))
                let value = context.aggregate(c, reduced: values, count: f.count)
                if value.isNaN { writer.null() } else { writer.number(value) }
            }
            writer.byte(UInt8(ascii: "}"))
        }
        if context.counts(of: f, into: &counts) { contents(counts, context.contents) }
        writer.byte(UInt8(ascii: "}"))
    }

    /// A cluster's `groups` (non-zero counts as `[index, count]`) and `flags`.
    private mutating func contents(_ counts: [Int32], _ contents: ClusterContents) {
        let groups = contents.groupSlots
        if groups > 0 {
            writer.raw(",\"groups\":[")
            var first = true
            for v in 0..<groups where counts[v] != 0 {
                writer.raw(first ? "[" : ",[")
                first = false
                writer.integer(v)
                writer.byte(UInt8(ascii: ","))
                writer.integer(Int(counts[v]))
                writer.byte(UInt8(ascii: "]"))
            }
            writer.byte(UInt8(ascii: "]"))
        }
        if !contents.flags.isEmpty {
            writer.raw(",\"flags\":[")
            for k in contents.flags.indices {
                if k > 0 { writer.byte(UInt8(ascii: ",")) }
                writer.integer(Int(counts[groups + k]))
            }
            writer.byte(UInt8(ascii: "]"))
        }
    }
}
