extension ServerMessage {
    static func hex(_ b: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return "0x\(digits[Int(b >> 4)])\(digits[Int(b & 15)])"
    }

    /// A batch after its first byte, `flags`, to a client holding `held` (by slot); the slots it
    /// removes go to `removedSlots`.
    static func batch(
        _ r: inout BinaryReader, flags: UInt8, held: [FeatureID], removedSlots: inout [Int]
    ) throws(WireError) -> BatchMessage {
        typealias Flag = BinaryMessageEncoder.BatchFlag
        let seq = try r.whole(after: r.state.seq, "seq", "seq")
        let number = try r.whole(after: r.state.number &+ 1, "batch", "batch")
        r.state.seq = seq
        r.state.number = number
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
            removedSlots.reserveCapacity(n)
            // Slots of what the client holds, descending: each the distance below the one before.
            var above = held.count
            for k in 0..<n {
                let start = r.offset
                let gap = try r.varint("remove", "remove[\(k)]")
                guard gap < UInt64(above) else {
                    throw r.invalid(
                        "remove", "remove[\(k)]",
                        "no held slot lies \(gap) below slot \(above) (the client holds \(held.count))", at: start)
                }
                above -= Int(gap) + 1
                removedSlots.append(above)
                remove.append(held[above])
            }
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
        typealias Flag = BinaryMessageEncoder.FeatureFlag
        let start = r.offset
        let head = try r.varint(list, "\(list)[\(k)] id")
        let id = try r.id(head >> 3, list, "\(list)[\(k)] id", at: start)
        let flags = head & 1 != 0 ? try r.byte(list, "\(list)[\(k)] flags") : 0
        guard flags < 1 << 7 else {
            throw r.invalid(list, "\(list)[\(k)] flags", "reserved bits set in \(hex(flags))", at: r.offset - 1)
        }
        let unit = BinaryGrid.unit(of: id)
        let latStart = r.offset
        let lat = try r.position(after: r.state.lat, unit: unit, limit: BinaryGrid.latLimit, list, "\(list)[\(k)] lat")
        guard let lat else {
            throw r.invalid(list, "\(list)[\(k)] lat", "outside ±90", at: latStart)
        }
        let lonStart = r.offset
        let lon = try r.position(after: r.state.lon, unit: unit, limit: BinaryGrid.lonLimit, list, "\(list)[\(k)] lon")
        guard let lon else {
            throw r.invalid(list, "\(list)[\(k)] lon", "outside ±180", at: lonStart)
        }
        r.state.lat = lat
        r.state.lon = lon
        let countWritten = id >> 32 != 0 || flags & Flag.count != 0
        let count = countWritten ? try r.whole(list, "\(list)[\(k)] count", limit: UInt64(UInt32.max)) : 1
        var f = WireFeature(id: id, lat: Double(lat) / 1e7, lon: Double(lon) / 1e7, count: UInt32(count))
        switch head >> 1 & 3 {
        case 1:
            f.parent = id
        case 2:
            f.parent = r.state.parentTag << 32 | id & 0xFFFF_FFFF
        case 3:
            f.parent = try r.parent(of: id, list, "\(list)[\(k)] parent")
        default:
            break
        }
        if flags & Flag.anchor != 0 {
            let start = r.offset
            // Relative to the feature's own position, on its grid.
            let anchorLat = try r.position(
                after: lat, unit: unit, limit: BinaryGrid.latLimit, list, "\(list)[\(k)] anchor lat")
            let anchorLon = try r.position(
                after: lon, unit: unit, limit: BinaryGrid.lonLimit, list, "\(list)[\(k)] anchor lon")
            guard let anchorLat, let anchorLon else {
                throw r.invalid(list, "\(list)[\(k)] anchor", "outside ±90, ±180", at: start)
            }
            f.anchor = Coordinate(lat: Double(anchorLat) / 1e7, lon: Double(anchorLon) / 1e7)
        }
        if flags & Flag.key != 0 { f.key = try r.string(list, "\(list)[\(k)] key") }
        if flags & Flag.properties != 0 {
            for p in 0..<(try r.count(list, "\(list)[\(k)] properties count")) {
                let name = try r.name(list, "\(list)[\(k)] property \(p) name")
                f.properties[name] = try r.propertyValue(list, "\(list)[\(k)] property \(p) value")
            }
        }
        if flags & Flag.aggregates != 0 {
            for a in 0..<(try r.count(list, "\(list)[\(k)] aggregates count")) {
                let name = try r.name(list, "\(list)[\(k)] aggregate \(a) name")
                f.aggregates[name] = try r.f64(list, "\(list)[\(k)] aggregate \(a) value")
            }
        }
        if flags & Flag.groups != 0 { f.groups = try groups(&r, count: Int(count), list, k) }
        if flags & Flag.flags != 0 {
            for _ in 0..<(try r.count(list, "\(list)[\(k)] flags count")) {
                f.flags.append(Int(try r.whole(list, "\(list)[\(k)] flag count", limit: UInt64(UInt32.max))))
            }
        }
        return f
    }

    /// A cluster's counts per value (docs/protocol.md, "A feature", item 10): a list of steps and
    /// counts, or a mask of the values present and their counts; the last value takes what the others
    /// leave of `count`.
    private static func groups(
        _ r: inout BinaryReader, count: Int, _ list: String, _ k: Int
    ) throws(WireError) -> [Int: Int] {
        var groups: [Int: Int] = [:]
        var left = count
        func add(_ index: Int, _ n: Int, at start: Int) throws(WireError) {
            guard n > 0, n <= left else {
                throw r.invalid(list, "\(list)[\(k)] groups", "counts exceed the cluster's count", at: start)
            }
            left -= n
            groups[index] = n
        }
        var start = r.offset
        let first = try r.varint(list, "\(list)[\(k)] groups")
        if first & 15 == 0 {
            let mask = first >> 4
            guard mask != 0 else { throw r.invalid(list, "\(list)[\(k)] groups", "an empty mask", at: start) }
            let highest = 63 - mask.leadingZeroBitCount
            for index in 0..<highest where mask >> index & 1 == 1 {
                start = r.offset
                try add(
                    index, Int(try r.whole(list, "\(list)[\(k)] groups count", limit: UInt64(UInt32.max))), at: start)
            }
            try add(highest, left, at: start)
            return groups
        }
        var entry = first
        var index = -1
        while true {
            index += Int(entry & 15)
            guard entry & 15 > 0, index < 256 else {
                throw r.invalid(list, "\(list)[\(k)] groups", "value index out of order or past 255", at: start)
            }
            try add(index, entry >> 4 == 0 ? left : Int(entry >> 4), at: start)
            if left == 0 { return groups }
            start = r.offset
            entry = try r.whole(list, "\(list)[\(k)] groups", limit: UInt64(UInt32.max) << 4 | 15)
        }
    }
}
