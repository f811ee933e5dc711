/// The two messages a page sends most, `viewport` and `ack`, read in one pass without a JSON tree:
/// they are most of what a server decodes, and building a dictionary of values for each cost about a
/// tenth of a binary server's time. Only the plain form is read here, an object of the message's own
/// keys, each once, with number values; anything else (an unknown or repeated key, `null`, an escape,
/// a value out of range) goes to ``ClientMessage/decode(_:)``'s general path, which names what is
/// wrong. The checks are that path's own, so both give the same message.
extension ClientMessage {
    static func decodeCommon(_ bytes: UnsafeBufferPointer<UInt8>) -> ClientMessage? {
        var c = JSONReader.Cursor(bytes: bytes)
        guard let f = readCommon(&c), let isViewport = f.isViewport else { return nil }
        if isViewport {
            guard f.batch == nil, f.applied == nil, f.ms == nil, let seq = f.seq, let bbox = f.bbox,
                let zoom = f.zoom, let width = f.width, let height = f.height,
                let seq = try? MessageFields.whole(.number(seq), name: "seq"),
                let edges = try? checked(bbox),
                let zoom = try? MessageFields.number(.number(zoom), name: "zoom", in: 0...ViewportMessage.maxZoom),
                let width = try? MessageFields.whole(.number(width), name: "width", in: ViewportMessage.pixelRange),
                let height = try? MessageFields.whole(.number(height), name: "height", in: ViewportMessage.pixelRange)
            else { return nil }
            var tileSize: UInt64?
            if let size = f.tileSize {
                guard let size = try? MessageFields.whole(.number(size), name: "tileSize", in: 1...4096) else {
                    return nil
                }
                tileSize = size
            }
            let viewport = try? viewport(
                seq: seq, edges: edges, zoom: zoom, width: width, height: height, tileSize: tileSize)
            return viewport.map { .viewport($0) }
        }
        guard f.seq == nil, f.bbox == nil, f.zoom == nil, f.width == nil, f.height == nil, f.tileSize == nil,
            let batch = f.batch, let applied = f.applied, let ms = f.ms,
            let batch = try? MessageFields.whole(.number(batch), name: "batch"),
            let applied = try? MessageFields.whole(.number(applied), name: "applied"),
            let ms = try? MessageFields.number(.number(ms), name: "ms", in: AckMessage.msRange)
        else { return nil }
        return .ack(AckMessage(batch: batch, applied: Int(applied), ms: ms))
    }

    /// The bbox edges as the general path checks them: latitudes within ±90.
    private static func checked(
        _ b: (Double, Double, Double, Double)
    ) throws(WireError) -> (Double, Double, Double, Double) {
        (
            try MessageFields.number(.number(b.0), name: "bbox"),
            try MessageFields.number(.number(b.1), name: "bbox", in: -90...90),
            try MessageFields.number(.number(b.2), name: "bbox"),
            try MessageFields.number(.number(b.3), name: "bbox", in: -90...90)
        )
    }

    /// The object's keys and values, or nil for any form but the plain one.
    private static func readCommon(_ c: inout JSONReader.Cursor) -> CommonFields? {
        var f = CommonFields()
        let read = c.plainObject { c, name in
            guard let key = c.key(at: name, of: CommonKey.self) else { return false }
            switch key {
            case .type:
                guard f.isViewport == nil, let isViewport = c.plainType() else { return false }
                f.isViewport = isViewport
            case .bbox:
                guard f.bbox == nil, let box = c.fourNumbers() else { return false }
                f.bbox = box
            default:
                guard let v = c.plainNumber(), f[key] == nil else { return false }
                f[key] = v
            }
            return true
        }
        return read && c.atEndAfterSpace() ? f : nil
    }
}

/// The keys of a plain `viewport` or `ack`.
private enum CommonKey: PlainKey {
    case type, seq, bbox, zoom, width, height, tileSize, batch, applied, ms

    var name: StaticString {
        switch self {
        case .type: "type"
        case .seq: "seq"
        case .bbox: "bbox"
        case .zoom: "zoom"
        case .width: "width"
        case .height: "height"
        case .tileSize: "tileSize"
        case .batch: "batch"
        case .applied: "applied"
        case .ms: "ms"
        }
    }
}

/// The values of a plain `viewport` or `ack`, as read.
private struct CommonFields {
    var isViewport: Bool?
    var seq, zoom, width, height, tileSize, batch, applied, ms: Double?
    var bbox: (Double, Double, Double, Double)?

    /// A number field's value.
    subscript(key: CommonKey) -> Double? {
        get {
            switch key {
            case .seq: seq
            case .zoom: zoom
            case .width: width
            case .height: height
            case .tileSize: tileSize
            case .batch: batch
            case .applied: applied
            case .ms: ms
            case .type, .bbox: nil
            }
        }
        set {
            switch key {
            case .seq: seq = newValue
            case .zoom: zoom = newValue
            case .width: width = newValue
            case .height: height = newValue
            case .tileSize: tileSize = newValue
            case .batch: batch = newValue
            case .applied: applied = newValue
            case .ms: ms = newValue
            case .type, .bbox: break
            }
        }
    }
}

extension JSONReader.Cursor {
    /// True for `"viewport"`, false for `"ack"`, nil for anything else.
    fileprivate mutating func plainType() -> Bool? {
        guard let (start, end) = plainString() else { return nil }
        if equals("viewport", from: start, to: end) { return true }
        if equals("ack", from: start, to: end) { return false }
        return nil
    }

    /// `[a, b, c, d]`, four numbers.
    fileprivate mutating func fourNumbers() -> (Double, Double, Double, Double)? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var values: (Double, Double, Double, Double) = (0, 0, 0, 0)
        for k in 0..<4 {
            skipSpace()
            guard let v = plainNumber() else { return nil }
            switch k {
            case 0: values.0 = v
            case 1: values.1 = v
            case 2: values.2 = v
            default: values.3 = v
            }
            skipSpace()
            guard take(UInt8(ascii: k == 3 ? "]" : ",")) else { return nil }
        }
        return values
    }
}
