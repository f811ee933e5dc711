/// What the page sees and at which zoom.
public struct ViewportMessage: Equatable, Sendable {
    /// Grows with every viewport the client sends; batches name the seq they serve.
    public var seq: UInt64
    /// West, south, east, north; normalised (longitudes wrapped, a box wider than the world becomes
    /// the whole world).
    public var bbox: BBox
    /// Map zoom, 0...24, fractional allowed.
    public var zoom: Double
    /// Map size in pixels, 1...16384.
    public var width: Int
    public var height: Int
    /// Pixels of one tile at the client's integer zooms: 256 for Leaflet, 512 (the index's own
    /// convention and the default) for MapLibre. The cluster radius then means screen pixels.
    public var tileSize: Int

    /// Largest zoom a client may ask for.
    public static let maxZoom = 24.0
    /// Largest width or height in pixels.
    public static let maxPixels = 16_384
    /// What a width or height may be.
    static let pixelRange = 1...Double(maxPixels)
    /// The tile size the index's zooms count in, and the one assumed when a client names none.
    public static let indexTileSize = 512
    /// Tile sizes a client may name: powers of two, so zooms differ by whole levels.
    public static let tileSizes = [64, 128, 256, 512, 1024, 2048, 4096]

    public init(seq: UInt64, bbox: BBox, zoom: Double, width: Int, height: Int, tileSize: Int = indexTileSize) {
        self.seq = seq
        self.bbox = bbox
        self.zoom = zoom
        self.width = width
        self.height = height
        self.tileSize = tileSize
    }

    /// Levels to add to a client zoom to get the index's zoom (−1 for 256-px tiles).
    public var zoomOffset: Double {
        // Both are powers of two: the difference of their exponents.
        Double(tileSize.trailingZeroBitCount - ViewportMessage.indexTileSize.trailingZeroBitCount)
    }

    /// The zoom the index is queried at: the client's zoom in 512-px-tile levels, at least 0.
    public var indexZoom: Double { max(0, zoom + zoomOffset) }
}

/// One feature a client still holds after a reconnect: its id and ``Feature/digest``.
public struct HeldFeature: Equatable, Sendable {
    public var id: FeatureID
    public var digest: UInt32

    public init(id: FeatureID, digest: UInt32) {
        self.id = id
        self.digest = digest
    }
}

/// Features a reconnecting client still holds, sent before its first viewport (possibly in several
/// messages), so the server sends only the difference.
public struct HeldMessage: Equatable, Sendable {
    /// The data version of the last batch the client applied (0 for data never changed).
    public var version: UInt64
    public var features: [HeldFeature]

    public init(version: UInt64, features: [HeldFeature]) {
        self.version = version
        self.features = features
    }
}

/// The client applied a batch.
public struct AckMessage: Equatable, Sendable {
    /// What `ms` may be.
    static let msRange = 0...Double.greatestFiniteMagnitude

    /// The batch number acknowledged.
    public var batch: UInt64
    /// Markers the client applied (removes, updates and adds).
    public var applied: Int
    /// How long applying them took on the client, in milliseconds.
    public var ms: Double

    public init(batch: UInt64, applied: Int, ms: Double) {
        self.batch = batch
        self.applied = applied
        self.ms = ms
    }
}

/// A session's settings; each field is optional, and a message carries at least one.
public struct SettingsMessage: Equatable, Sendable {
    /// Switch this session's algorithm.
    public var algorithm: Algorithm?
    /// Opt in to (true) or out of (false) presence: other sessions' viewport outlines.
    public var presence: Bool?
    /// Show only the points passing a filter, or (`null`) every point again.
    public var filter: FilterSetting?

    public init(algorithm: Algorithm? = nil, presence: Bool? = nil, filter: FilterSetting? = nil) {
        self.algorithm = algorithm
        self.presence = presence
        self.filter = filter
    }
}

/// A `settings` message's `filter`: an expression, or `null` to clear it.
public enum FilterSetting: Equatable, Sendable {
    case set(FilterExpression)
    case clear

    /// The filter asked for; nil for every point.
    public var expression: FilterExpression? {
        if case .set(let f) = self { f } else { nil }
    }
}

/// A page of a cluster's points, in ascending id order.
public struct LeavesRequest: Equatable, Sendable {
    /// Points a page holds when the request names no `limit`.
    public static let defaultLimit = 100
    /// Most points a page may hold.
    public static let maxLimit = 500

    public var id: FeatureID
    public var req: UInt64
    /// Points in the page, 1 ... ``maxLimit``.
    public var limit: Int
    /// The page starts after this point id (the cursor); nil for the first page.
    public var after: UInt32?

    public init(id: FeatureID, req: UInt64, limit: Int = defaultLimit, after: UInt32? = nil) {
        self.id = id
        self.req = req
        self.limit = limit
        self.after = after
    }

    /// The cursor of the page after the point with id `after`: keyed on ids, so a page never repeats a
    /// point and changes between pages shift nothing. The text is the protocol's to change; clients
    /// send it back as it is.
    public static func cursor(after id: UInt32) -> String { "i" + String(id, radix: 36) }

    /// The point id a cursor names, nil for text that no cursor is.
    public static func id(ofCursor text: String) -> UInt32? {
        guard text.first == "i", text.count > 1, text.count <= 8 else { return nil }
        return UInt32(text.dropFirst(), radix: 36)
    }
}

/// A message from the page to the server.
public enum ClientMessage: Equatable, Sendable {
    case viewport(ViewportMessage)
    case ack(AckMessage)
    /// Open a cluster: the answer is an `expansion`.
    case expand(id: FeatureID)
    case settings(SettingsMessage)
    /// After a reconnect: features the client still draws.
    case held(HeldMessage)
    /// The client's heartbeat: the answer is a `pong` with the same id.
    case ping(id: UInt64)
    /// A cluster's features one zoom finer: the answer is a `children` with the same `req`.
    case children(id: FeatureID, req: UInt64)
    /// A page of a cluster's points: the answer is a `leaves` with the same `req`.
    case leaves(LeavesRequest)

    /// Decodes and validates one message.
    /// - Parameter bytes: the UTF-8 text of one WebSocket frame.
    /// - Returns: the message, every field checked and the bbox normalised.
    /// - Throws: ``WireError`` naming the field at fault; send it back as an `error` message.
    public static func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws(WireError) -> ClientMessage {
        if let common = decodeCommon(bytes) { return common }
        return try decodeGeneral(bytes)
    }

    /// ``decode(_:)`` through a JSON tree: every message, every error.
    static func decodeGeneral(_ bytes: UnsafeBufferPointer<UInt8>) throws(WireError) -> ClientMessage {
        let m = try MessageFields.root(bytes)
        switch m.type {
        case "viewport":
            let seq = try m.whole("seq")
            let box = try m.array("bbox")
            guard box.count == 4 else {
                throw MessageFields.invalid("bbox", "must be [west, south, east, north], got \(box.count) numbers")
            }
            let names = ["west", "south", "east", "north"]
            var edges = [Double](repeating: 0, count: 4)
            for k in 0..<4 {
                let range: ClosedRange<Double>? = k % 2 == 1 ? -90...90 : nil
                do {
                    edges[k] = try MessageFields.number(box[k], name: "bbox", in: range)
                } catch {
                    let detail = error.message.dropFirst("bbox ".count)
                    throw MessageFields.invalid("bbox", "\(names[k]) (bbox[\(k)]) \(detail)")
                }
            }
            let zoom = try m.number("zoom", in: 0...ViewportMessage.maxZoom)
            let width = try m.whole("width", in: ViewportMessage.pixelRange)
            let height = try m.whole("height", in: ViewportMessage.pixelRange)
            let tileSize = m.has("tileSize") ? try m.whole("tileSize", in: 1...4096) : nil
            return .viewport(
                try viewport(
                    seq: seq, edges: (edges[0], edges[1], edges[2], edges[3]), zoom: zoom, width: width,
                    height: height, tileSize: tileSize))
        case "ack":
            let batch = try m.whole("batch")
            let applied = try m.whole("applied")
            let ms = try m.number("ms", in: AckMessage.msRange)
            return .ack(AckMessage(batch: batch, applied: Int(applied), ms: ms))
        case "expand":
            return .expand(id: try m.whole("id"))
        case "settings":
            var settings = SettingsMessage()
            // `"filter": null` is there: it clears the filter.
            let hasFilter = m.object["filter"] != nil
            if m.has("algorithm") || !(m.has("presence") || hasFilter) {
                let name = try m.string("algorithm")
                guard let algorithm = Algorithm(rawValue: name) else {
                    let known = Algorithm.allCases.map(\.rawValue).joined(separator: ", ")
                    throw MessageFields.invalid("algorithm", "must be one of \(known), got \"\(name)\"")
                }
                settings.algorithm = algorithm
            }
            if m.has("presence") {
                settings.presence = try m.bool("presence")
            }
            if let value = m.object["filter"] {
                if value == .null {
                    settings.filter = .clear
                } else {
                    do throws(FilterError) {
                        settings.filter = .set(try FilterExpression(json: value, path: "filter"))
                    } catch {
                        throw WireError(.invalidField, field: "filter", message: error.description)
                    }
                }
            }
            return .settings(settings)
        case "held":
            let version = try m.whole("version")
            var held: [HeldFeature] = []
            for (k, item) in try m.array("features").enumerated() {
                guard case .array(let pair) = item, pair.count == 2 else {
                    throw MessageFields.invalid("features", "features[\(k)] must be [id, digest]")
                }
                let id = try MessageFields.whole(pair[0], name: "features")
                let digest = try MessageFields.whole(pair[1], name: "features", in: 0...Double(UInt32.max))
                held.append(HeldFeature(id: id, digest: UInt32(digest)))
            }
            return .held(HeldMessage(version: version, features: held))
        case "ping":
            return .ping(id: try m.whole("id"))
        case "children", "leaves":
            // Read first, so an error about any other field names the request it refuses.
            let req = try m.whole("req")
            do throws(WireError) {
                return try request(m, req: req)
            } catch {
                var refused = error
                refused.req = req
                throw refused
            }
        default:
            throw WireError(
                .unknownType, field: "type",
                message:
                    "unknown message type \"\(m.type)\"; expected viewport, ack, expand, settings, held, ping, children or leaves"
            )
        }
    }

    /// A `children` or `leaves` request's fields besides `req`.
    private static func request(_ m: MessageFields, req: UInt64) throws(WireError) -> ClientMessage {
        let id = try m.whole("id")
        guard m.type == "leaves" else { return .children(id: id, req: req) }
        let limit = m.has("limit") ? Int(try m.whole("limit", in: 1...Double(LeavesRequest.maxLimit))) : nil
        var after: UInt32?
        if m.has("cursor") {
            let text = try m.string("cursor")
            guard let cursorID = LeavesRequest.id(ofCursor: text) else {
                throw MessageFields.invalid("cursor", "is not a cursor of this server: \"\(text)\"")
            }
            after = cursorID
        }
        return .leaves(LeavesRequest(id: id, req: req, limit: limit ?? LeavesRequest.defaultLimit, after: after))
    }

    /// A viewport from its checked fields: the tile size one of those the index serves, the box
    /// normalised and of a span the server takes.
    static func viewport(
        seq: UInt64, edges: (Double, Double, Double, Double), zoom: Double, width: UInt64, height: UInt64,
        tileSize: UInt64?
    ) throws(WireError) -> ViewportMessage {
        if let tileSize, !ViewportMessage.tileSizes.contains(Int(tileSize)) {
            let sizes = ViewportMessage.tileSizes.map(String.init).joined(separator: ", ")
            throw MessageFields.invalid("tileSize", "must be one of \(sizes), got \(tileSize)")
        }
        let bbox = BBox.normalized(west: edges.0, south: edges.1, east: edges.2, north: edges.3)
        let viewport = ViewportMessage(
            seq: seq, bbox: bbox, zoom: zoom, width: Int(width), height: Int(height),
            tileSize: tileSize.map { Int($0) } ?? ViewportMessage.indexTileSize)
        if let problem = viewport.spanProblem { throw MessageFields.invalid("bbox", problem) }
        return viewport
    }

    /// Decodes one message held in an array.
    public static func decode(_ bytes: [UInt8]) throws(WireError) -> ClientMessage {
        let result: Result<ClientMessage, WireError> = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(WireError) in try decode(buffer) }
        }
        return try result.get()
    }

    /// Whether `bytes` could be an `ack`, from a scan alone: short enough, and holding `"ack"`. Every
    /// valid ack passes; so does the odd other message, which only costs it its place in line. A
    /// message that does not pass needs no decoding to know it is no ack.
    public static func mayBeAcknowledgement(_ bytes: [UInt8]) -> Bool {
        bytes.count <= 256 && mentions(#""ack""#, in: bytes)
    }

    /// Whether a message may be a `children` or `leaves` request, from its bytes alone (the word in
    /// quotes, in a message short enough to be one), so a server can take it ahead of viewports; a
    /// message it wrongly takes for one is only served early.
    public static func mayBeLookup(_ bytes: [UInt8]) -> Bool {
        guard bytes.count <= 256 else { return false }
        return mentions(#""leaves""#, in: bytes) || mentions(#""children""#, in: bytes)
    }

    /// Whether `bytes` hold `word` (two bytes or more, such as a quoted key), from a scan alone, so a
    /// server can route a message before decoding it.
    public static func mentions(_ word: StaticString, in bytes: [UInt8]) -> Bool {
        let w = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard bytes.count >= w.count else { return false }
        return bytes.withUnsafeBufferPointer { b in
            for start in 0...(b.count - w.count) where b[start] == w[0] && b[start + 1] == w[1] {
                var k = 2
                while k < w.count && b[start + k] == w[k] { k += 1 }
                if k == w.count { return true }
            }
            return false
        }
    }

    /// Decodes one message held in a string.
    public static func decode(_ text: String) throws(WireError) -> ClientMessage {
        try decode(Array(text.utf8))
    }

    /// Writes the message as JSON (what a client sends), replacing what `writer` held.
    public func encode(into writer: inout JSONWriter) {
        writer.reset()
        writer.raw("{\"type\":")
        switch self {
        case .viewport(let v):
            writer.raw("\"viewport\",\"seq\":")
            writer.integer(v.seq)
            writer.raw(",\"bbox\":")
            writer.bbox(v.bbox)
            writer.raw(",\"zoom\":")
            writer.number(v.zoom)
            writer.raw(",\"width\":")
            writer.integer(v.width)
            writer.raw(",\"height\":")
            writer.integer(v.height)
            if v.tileSize != ViewportMessage.indexTileSize {
                writer.raw(",\"tileSize\":")
                writer.integer(v.tileSize)
            }
        case .ack(let a):
            writer.raw("\"ack\",\"batch\":")
            writer.integer(a.batch)
            writer.raw(",\"applied\":")
            writer.integer(a.applied)
            writer.raw(",\"ms\":")
            writer.number(a.ms)
        case .expand(let id):
            writer.raw("\"expand\",\"id\":")
            writer.integer(id)
        case .settings(let s):
            writer.raw("\"settings\"")
            if let algorithm = s.algorithm {
                writer.raw(",\"algorithm\":")
                writer.string(algorithm.rawValue)
            }
            if let presence = s.presence {
                writer.raw(",\"presence\":")
                writer.bool(presence)
            }
            if let filter = s.filter {
                writer.raw(",\"filter\":")
                if let f = filter.expression { f.write(into: &writer) } else { writer.null() }
            }
        case .held(let h):
            writer.raw("\"held\",\"version\":")
            writer.integer(h.version)
            writer.raw(",\"features\":[")
            for (k, f) in h.features.enumerated() {
                if k > 0 { writer.byte(UInt8(ascii: ",")) }
                writer.byte(UInt8(ascii: "["))
                writer.integer(f.id)
                writer.byte(UInt8(ascii: ","))
                writer.integer(UInt64(f.digest))
                writer.byte(UInt8(ascii: "]"))
            }
            writer.byte(UInt8(ascii: "]"))
        case .ping(let id):
            writer.raw("\"ping\",\"id\":")
            writer.integer(id)
        case .children(let id, let req):
            writer.raw("\"children\",\"id\":")
            writer.integer(id)
            writer.raw(",\"req\":")
            writer.integer(req)
        case .leaves(let r):
            writer.raw("\"leaves\",\"id\":")
            writer.integer(r.id)
            writer.raw(",\"req\":")
            writer.integer(r.req)
            writer.raw(",\"limit\":")
            writer.integer(r.limit)
            writer.raw(",\"cursor\":")
            if let after = r.after { writer.string(LeavesRequest.cursor(after: after)) } else { writer.null() }
        }
        writer.byte(UInt8(ascii: "}"))
    }

    /// The message as JSON text.
    public var json: String {
        var writer = JSONWriter(capacity: 128)
        encode(into: &writer)
        return writer.text
    }
}
