extension ServerMessage {
    /// Decodes and checks one binary frame of `pinwheel.v1+bin`: a `batch` or an `expansion`.
    /// - Throws: ``WireError`` naming what does not match the protocol and the byte where it is.
    public static func decode(binary bytes: UnsafeBufferPointer<UInt8>) throws(WireError) -> ServerMessage {
        var r = BinaryReader(bytes)
        let first = try r.byte("type", "first byte")
        let message: ServerMessage
        switch first & 3 {
        case BinaryMessageEncoder.batchType: message = .batch(try batch(&r, flags: first))
        case BinaryMessageEncoder.expansionType: message = .expansion(try expansion(&r, flags: first))
        default:
            throw r.invalid(
                "type", "first byte",
                "unknown message type \(first & 3) in \(hex(first)); expected 1 (batch) or 2 (expansion)", at: 0)
        }
        guard r.remaining == 0 else {
            throw r.invalid("type", "end of message", "\(r.remaining) bytes left after the message")
        }
        return message
    }

    /// Decodes one binary frame held in an array.
    public static func decode(binary bytes: [UInt8]) throws(WireError) -> ServerMessage {
        let result: Swift.Result<ServerMessage, WireError> = bytes.withUnsafeBufferPointer { buffer in
            Swift.Result { () throws(WireError) in try decode(binary: buffer) }
        }
        return try result.get()
    }

    /// Decodes one frame of a session: JSON in a text frame, `pinwheel.v1+bin` in a binary one.
    public static func decode(frame: [UInt8], binary: Bool) throws(WireError) -> ServerMessage {
        binary ? try decode(binary: frame) : try decode(frame)
    }

    static func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return "0x\(digits[Int(b >> 4)])\(digits[Int(b & 15)])"
    }

    /// A batch after its first byte, `flags`.
    static func batch(_ r: inout BinaryReader, flags: UInt8) throws(WireError) -> BatchMessage {
        typealias Flag = BinaryMessageEncoder.BatchFlag
        let seq = try r.whole("seq", "seq")
        let number = try r.whole("batch", "batch")
        let version = flags & Flag.version != 0 ? try r.whole("version", "version") : 0
        var capped: BatchMessage.Capped?
        if flags & Flag.capped != 0 {
            capped = BatchMessage.Capped(
                limit: Int(try r.whole("capped", "capped limit")),
                available: Int(try r.whole("capped", "capped available")))
        }
        var remove: [FeatureID] = []
        if flags & Flag.remove != 0 {
            let n = try r.count("remove", "remove count")
            remove.reserveCapacity(n)
            for k in 0..<n { remove.append(try r.id("remove", "remove[\(k)]")) }
        }
        let add = flags & Flag.add != 0 ? try features(&r, "add") : []
        let update = flags & Flag.update != 0 ? try features(&r, "update") : []
        return BatchMessage(
            seq: seq, batch: number, remove: remove, add: add, update: update, done: flags & Flag.done != 0,
            capped: capped, version: version)
    }

    /// An expansion after its first byte, `flags`.
    static func expansion(_ r: inout BinaryReader, flags: UInt8) throws(WireError) -> ExpansionMessage {
        guard flags & ~(3 | BinaryMessageEncoder.spreadFlag) == 0 else {
            throw r.invalid("type", "first byte", "unknown expansion flags in \(hex(flags))", at: 0)
        }
        let id = try r.id("id", "expansion id")
        if flags & BinaryMessageEncoder.spreadFlag != 0 {
            return ExpansionMessage(id: id, result: .spread(try features(&r, "spread")))
        }
        let zoom = try r.f64("zoom", "zoom")
        guard zoom.isFinite else { throw r.invalid("zoom", "zoom", "not a finite number", at: r.offset - 8) }
        return ExpansionMessage(id: id, result: .zoom(zoom))
    }

    /// A count, then that many features, named `list[k]` in errors.
    static func features(_ r: inout BinaryReader, _ list: String) throws(WireError) -> [WireFeature] {
        let n = try r.count(list, "\(list) count")
        var out: [WireFeature] = []
        out.reserveCapacity(n)
        for k in 0..<n { out.append(try feature(&r, list, k)) }
        return out
    }

    /// Feature `k` of `list`; errors call it `list[k]`.
    static func feature(_ r: inout BinaryReader, _ list: String, _ k: Int) throws(WireError) -> WireFeature {
        let header = try r.byte(list, "\(list)[\(k)] header")
        guard header & 0x80 == 0 else {
            throw r.invalid(list, "\(list)[\(k)] header", "reserved bit 7 set in \(hex(header))", at: r.offset - 1)
        }
        let id = try r.id(list, "\(list)[\(k)] id")
        let latStart = r.offset
        r.lat += try r.zigzag(list, "\(list)[\(k)] lat")
        let lonStart = r.offset
        r.lon += try r.zigzag(list, "\(list)[\(k)] lon")
        guard r.lat.magnitude <= 900_000_000 else {
            throw r.invalid(list, "\(list)[\(k)] lat", "\(Double(r.lat) / 1e7) is outside ±90", at: latStart)
        }
        guard r.lon.magnitude <= 1_800_000_000 else {
            throw r.invalid(list, "\(list)[\(k)] lon", "\(Double(r.lon) / 1e7) is outside ±180", at: lonStart)
        }
        let count = header & 4 != 0 ? 1 : try r.whole(list, "\(list)[\(k)] count", limit: UInt64(UInt32.max))
        var f = WireFeature(id: id, lat: Double(r.lat) / 1e7, lon: Double(r.lon) / 1e7, count: UInt32(count))
        switch header & 3 {
        case 1:
            f.parent = id
        case 2:
            f.parent = r.parentTag << 32 | id & 0xFFFF_FFFF
        case 3:
            f.parent = try r.parent(of: id, list, "\(list)[\(k)] parent")
        default:
            break
        }
        if header & 8 != 0 {
            let start = r.offset
            let lat = r.lat + (try r.zigzag(list, "\(list)[\(k)] anchor lat"))
            let lon = r.lon + (try r.zigzag(list, "\(list)[\(k)] anchor lon"))
            guard lat.magnitude <= 900_000_000, lon.magnitude <= 1_800_000_000 else {
                throw r.invalid(list, "\(list)[\(k)] anchor", "outside ±90, ±180", at: start)
            }
            f.anchor = Coordinate(lat: Double(lat) / 1e7, lon: Double(lon) / 1e7)
        }
        if header & 16 != 0 { f.key = try r.string(list, "\(list)[\(k)] key") }
        if header & 32 != 0 {
            for p in 0..<(try r.count(list, "\(list)[\(k)] properties count")) {
                let name = try r.name(list, "\(list)[\(k)] property \(p) name")
                f.properties[name] = try r.string(list, "\(list)[\(k)] property \(p) value")
            }
        }
        if header & 64 != 0 {
            for a in 0..<(try r.count(list, "\(list)[\(k)] aggregates count")) {
                let name = try r.name(list, "\(list)[\(k)] aggregate \(a) name")
                f.aggregates[name] = try r.f64(list, "\(list)[\(k)] aggregate \(a) value")
            }
        }
        return f
    }
}
