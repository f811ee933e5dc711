/// A feature as a client reads it off the wire.
public struct WireFeature: Equatable, Sendable {
    public var id: FeatureID
    public var lat: Double
    public var lon: Double
    public var count: UInt32
    public var parent: FeatureID?
    public var anchor: Coordinate?
    /// The name of a point a producer named by a string.
    public var key: String?
    /// A point's dataset columns.
    public var properties: [String: PropertyValue]
    /// A cluster's aggregate values by name; NaN for `null` (no point had a value).
    public var aggregates: [String: Double]
    /// A cluster's counts by value index of hello's `groups` (only those not 0).
    public var groups: [Int: Int] = [:]
    /// A cluster's counts per flag of hello's `flags`; empty without flags.
    public var flags: [Int] = []

    public init(
        id: FeatureID, lat: Double, lon: Double, count: UInt32, parent: FeatureID? = nil,
        anchor: Coordinate? = nil, properties: [String: PropertyValue] = [:],
        aggregates: [String: Double] = [:]
    ) {
        self.id = id
        self.lat = lat
        self.lon = lon
        self.count = count
        self.parent = parent
        self.anchor = anchor
        self.properties = properties
        self.aggregates = aggregates
    }
}

/// A `batch` as a client reads it.
public struct BatchMessage: Equatable, Sendable {
    /// On the last batch of a viewport that had more features than the server serves for one:
    /// `limit` of the `available` ones were sent, those nearest the viewport's centre.
    public struct Capped: Equatable, Sendable {
        public var limit: Int
        public var available: Int

        public init(limit: Int, available: Int) {
            self.limit = limit
            self.available = available
        }
    }

    public var seq: UInt64
    public var batch: UInt64
    public var remove: [FeatureID]
    public var add: [WireFeature]
    public var update: [WireFeature]
    public var done: Bool
    public var capped: Capped?
    /// The change-log version of the data the batch was computed from (0 for data never changed).
    public var version: UInt64

    public init(
        seq: UInt64, batch: UInt64, remove: [FeatureID], add: [WireFeature], update: [WireFeature], done: Bool,
        capped: Capped? = nil, version: UInt64 = 0
    ) {
        self.seq = seq
        self.batch = batch
        self.remove = remove
        self.add = add
        self.update = update
        self.done = done
        self.capped = capped
        self.version = version
    }
}

/// An `expansion` as a client reads it.
public struct ExpansionMessage: Equatable, Sendable {
    public enum Result: Equatable, Sendable {
        /// Zoom here to see the cluster split.
        case zoom(Double)
        /// The members of a same-coordinate group, spread.
        case spread([WireFeature])
    }

    public var id: FeatureID
    public var result: Result

    public init(id: FeatureID, result: Result) {
        self.id = id
        self.result = result
    }
}

/// Another session's viewport, as a `presence` message shows it.
public struct PresenceViewport: Equatable, Sendable {
    public var session: String
    public var bbox: BBox
    public var zoom: Double

    public init(session: String, bbox: BBox, zoom: Double) {
        self.session = session
        self.bbox = bbox
        self.zoom = zoom
    }
}

/// A `leaves` answer as a client reads it.
public struct LeavesMessage: Equatable, Sendable {
    public var req: UInt64
    public var id: FeatureID
    /// The points the cluster holds now.
    public var total: Int
    public var points: [WireFeature]
    /// The next page's cursor; nil after the last page.
    public var next: String?

    public init(req: UInt64, id: FeatureID, total: Int, points: [WireFeature], next: String?) {
        self.req = req
        self.id = id
        self.total = total
        self.points = points
        self.next = next
    }
}

/// A message from the server, as a client (the load tool, tests) reads it.
public enum ServerMessage: Equatable, Sendable {
    case hello(HelloMessage)
    case batch(BatchMessage)
    case expansion(ExpansionMessage)
    case error(WireError)
    case presence([PresenceViewport])
    /// The answer to a client's `ping`, with its id.
    case pong(id: UInt64)
    /// The answer to `children`: the request's `req`, the cluster's id and its children.
    case children(req: UInt64, id: FeatureID, features: [WireFeature])
    /// The answer to `leaves`: one page of a cluster's points.
    case leaves(LeavesMessage)

    /// Decodes and checks one server message.
    /// - Throws: ``WireError`` naming what does not match the protocol.
    public static func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws(WireError) -> ServerMessage {
        let m = try MessageFields.root(bytes)
        switch m.type {
        case "hello":
            let proto = try m.string("protocol")
            guard let encoding = WireEncoding(rawValue: proto) else {
                throw MessageFields.invalid(
                    "protocol",
                    "must be \(WireEncoding.json.rawValue) or \(WireEncoding.binary.rawValue), got \"\(proto)\"")
            }
            let algorithms = try m.array("algorithms").map { (v) throws(WireError) in try algorithm(v, "algorithms") }
            let d = try m.object("dataset")
            var bounds: BBox?
            if d.has("bounds") {
                let b = try d.array("bounds").map { (v) throws(WireError) in try MessageFields.number(v, name: "bounds")
                }
                guard b.count == 4 else { throw MessageFields.invalid("bounds", "must hold 4 numbers") }
                bounds = BBox(west: b[0], south: b[1], east: b[2], north: b[3])
            }
            let aggregates = try d.array("aggregates").map { (v) throws(WireError) in try aggregate(v) }
            let o = try m.object("options")
            let l = try m.object("limits")
            var groups: HelloMessage.Groups?
            if m.has("groups") {
                let g = try m.object("groups")
                let values = try g.array("values").map { (v) throws(WireError) in try string(v, "values") }
                groups = HelloMessage.Groups(column: try g.string("column"), values: values)
            }
            let flags =
                m.has("flags") ? try m.array("flags").map { (v) throws(WireError) in try string(v, "flags") } : []
            var hello =
                HelloMessage(
                    session: try m.string("session"),
                    algorithm: try algorithm(m.value("algorithm"), "algorithm"),
                    algorithms: algorithms,
                    dataset: .init(
                        name: try d.string("name"), points: Int(try d.whole("points")), bounds: bounds,
                        unlocated: Int(try d.whole("unlocated")), skipped: Int(try d.whole("skipped")),
                        aggregates: aggregates),
                    options: .init(
                        minZoom: Int(try o.whole("minZoom")), maxZoom: Int(try o.whole("maxZoom")),
                        minPoints: Int(try o.whole("minPoints")), radius: try o.number("radius"),
                        extent: Int(try o.whole("extent")),
                        spread: try o.string("spread"), maxClusters: Int(try o.whole("maxClusters"))),
                    limits: .init(
                        viewportHz: try l.number("viewportHz"), pace: try l.number("pace"),
                        window: Int(try l.whole("window")), maxMessageBytes: Int(try l.whole("maxMessageBytes")),
                        maxZoom: try l.number("maxZoom"), maxPixels: Int(try l.whole("maxPixels")),
                        maxFeatures: Int(try l.whole("maxFeatures"))),
                    encoding: encoding)
            hello.groups = groups
            hello.flags = flags
            return .hello(hello)
        case "batch":
            let remove = try m.array("remove").map { (v) throws(WireError) in try MessageFields.whole(v, name: "remove")
            }
            return .batch(
                BatchMessage(
                    seq: try m.whole("seq"), batch: try m.whole("batch"), remove: remove,
                    add: try features(m.array("add"), "add"), update: try features(m.array("update"), "update"),
                    done: try m.bool("done"), capped: try capped(m),
                    version: m.has("version") ? try m.whole("version") : 0))
        case "expansion":
            let id = try m.whole("id")
            if m.has("zoom") { return .expansion(ExpansionMessage(id: id, result: .zoom(try m.number("zoom")))) }
            return .expansion(ExpansionMessage(id: id, result: .spread(try features(m.array("spread"), "spread"))))
        case "error":
            let name = try m.string("code")
            guard let code = WireError.Code(rawValue: name) else {
                throw MessageFields.invalid("code", "is not a known error code: \"\(name)\"")
            }
            let field = m.has("field") ? try m.string("field") : nil
            let retry = m.has("retryMs") ? Int(try m.whole("retryMs")) : nil
            let req = m.has("req") ? try m.whole("req") : nil
            return .error(WireError(code, field: field, message: try m.string("message"), retryMs: retry, req: req))
        case "presence":
            return .presence(try presenceViewports(m.array("viewports")))
        case "pong":
            return .pong(id: try m.whole("id"))
        case "children":
            return .children(
                req: try m.whole("req"), id: try m.whole("id"), features: try features(m.array("features"), "features"))
        case "leaves":
            let next = m.has("next") ? try m.string("next") : nil
            return .leaves(
                LeavesMessage(
                    req: try m.whole("req"), id: try m.whole("id"), total: Int(try m.whole("total")),
                    points: try features(m.array("points"), "points"), next: next))
        default:
            throw WireError(
                .unknownType, field: "type",
                message:
                    "unknown message type \"\(m.type)\"; expected hello, batch, expansion, error, presence, pong, children or leaves"
            )
        }
    }

    /// Decodes one message held in an array.
    public static func decode(_ bytes: [UInt8]) throws(WireError) -> ServerMessage {
        let result: Swift.Result<ServerMessage, WireError> = bytes.withUnsafeBufferPointer { buffer in
            Swift.Result { () throws(WireError) in try decode(buffer) }
        }
        return try result.get()
    }

    /// Decodes one message held in a string.
    public static func decode(_ text: String) throws(WireError) -> ServerMessage {
        try decode(Array(text.utf8))
    }

    static func capped(_ m: MessageFields) throws(WireError) -> BatchMessage.Capped? {
        guard m.has("capped") else { return nil }
        let c = try m.object("capped")
        return BatchMessage.Capped(limit: Int(try c.whole("limit")), available: Int(try c.whole("available")))
    }

    static func algorithm(_ v: JSONValue, _ name: String) throws(WireError) -> Algorithm {
        let s = try string(v, name)
        guard let a = Algorithm(rawValue: s) else {
            throw MessageFields.invalid(name, "has an unknown algorithm \"\(s)\"")
        }
        return a
    }

    /// One of `hello`'s aggregates: `{"name":…,"op":…,"column":…}`.
    static func aggregate(_ v: JSONValue) throws(WireError) -> Aggregate {
        guard case .object(let o) = v else { throw MessageFields.invalid("aggregates", "must hold objects") }
        let entry = MessageFields(object: o, type: "an aggregate")
        let op = try entry.string("op")
        guard let operation = Aggregate.Operation(rawValue: op) else {
            throw MessageFields.invalid("op", "must be sum, min, max or mean, got \"\(op)\"")
        }
        return Aggregate(name: try entry.string("name"), operation: operation, column: try entry.string("column"))
    }

    static func string(_ v: JSONValue, _ name: String) throws(WireError) -> String {
        guard case .string(let s) = v else { throw MessageFields.invalid(name, "must hold strings, got \(v.kindName)") }
        return s
    }

    static func presenceViewports(_ list: [JSONValue]) throws(WireError) -> [PresenceViewport] {
        var out: [PresenceViewport] = []
        for v in list {
            guard case .object(let o) = v else { throw MessageFields.invalid("viewports", "must hold objects") }
            let entry = MessageFields(object: o, type: "a presence viewport")
            let b = try entry.array("bbox").map { (v) throws(WireError) in try MessageFields.number(v, name: "bbox") }
            guard b.count == 4 else { throw MessageFields.invalid("bbox", "must hold 4 numbers") }
            out.append(
                PresenceViewport(
                    session: try entry.string("session"), bbox: BBox(west: b[0], south: b[1], east: b[2], north: b[3]),
                    zoom: try entry.number("zoom")))
        }
        return out
    }

    static func features(_ list: [JSONValue], _ name: String) throws(WireError) -> [WireFeature] {
        var out: [WireFeature] = []
        out.reserveCapacity(list.count)
        for v in list {
            guard case .object(let o) = v else { throw MessageFields.invalid(name, "must hold feature objects") }
            let f = MessageFields(object: o, type: "a feature")
            var feature = WireFeature(
                id: try f.whole("id"), lat: try f.number("lat", in: -90...90), lon: try f.number("lon", in: -180...180),
                count: UInt32(try f.whole("count", in: 0...Double(UInt32.max))))
            if f.has("parent") { feature.parent = try f.whole("parent") }
            if f.has("anchor") {
                let a = try f.object("anchor")
                feature.anchor = Coordinate(lat: try a.number("lat"), lon: try a.number("lon"))
            }
            if f.has("key") { feature.key = try f.string("key") }
            if f.has("properties") {
                for (key, value) in try f.object("properties").object.members {
                    guard let typed = PropertyValue(json: value), !value.isComposite else {
                        throw MessageFields.invalid(
                            "properties", "values must be strings, numbers or booleans; \"\(key)\" is \(value.kindName)"
                        )
                    }
                    feature.properties[key] = typed
                }
            }
            if f.has("aggregates") {
                for (key, value) in try f.object("aggregates").object.members {
                    feature.aggregates[key] =
                        value == .null ? .nan : try MessageFields.number(value, name: "aggregates")
                }
            }
            if f.has("groups") {
                for entry in try f.array("groups") {
                    guard case .array(let pair) = entry, pair.count == 2 else {
                        throw MessageFields.invalid("groups", "must hold [index, count] pairs")
                    }
                    let index = Int(try MessageFields.whole(pair[0], name: "groups", in: 0...255))
                    feature.groups[index] = Int(try MessageFields.whole(pair[1], name: "groups"))
                }
            }
            if f.has("flags") {
                feature.flags = try f.array("flags").map { (v) throws(WireError) in
                    Int(try MessageFields.whole(v, name: "flags"))
                }
            }
            out.append(feature)
        }
        return out
    }
}
