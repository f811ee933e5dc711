/// Changes as compact bytes, for the change log's records: per change an op byte (2 upsert, 1 delete;
/// 0, an upsert whose values are all strings, is what earlier records hold and is still read), the key
/// (0 and a u32, or 1 and a u16 length and UTF-8), then for an upsert lat and lon as f64 and the
/// properties: a u16 count, each a name (u32 length and UTF-8) and a value (``PropertyValueCoding``;
/// for op 0 a u32 length and UTF-8). Little-endian.
public enum ChangeCodec {
    /// The bytes of `changes`, preceded by their count (u32).
    public static func encode(_ changes: [Change]) -> [UInt8] {
        var w = ByteWriter()
        w.bytes.reserveCapacity(changes.count * 32)
        w.u32(UInt32(changes.count))
        for change in changes {
            switch change {
            case .upsert(let key, let lat, let lon, let properties):
                w.u8(2)
                write(key, &w)
                w.f64(lat)
                w.f64(lon)
                w.u16(UInt16(properties.count))
                for (name, value) in properties.sorted(by: { $0.key < $1.key }) {
                    w.string(name)
                    PropertyValueCoding.write(value, &w)
                }
            case .delete(let key):
                w.u8(1)
                write(key, &w)
            }
        }
        return w.bytes
    }

    /// Reads what ``encode(_:)`` wrote.
    /// - Throws: ``SnapshotError`` (offset and reason) for bytes that are not such a list.
    public static func decode(_ bytes: ArraySlice<UInt8>) throws(SnapshotError) -> [Change] {
        do throws(ByteReader.Failure) {
            var r = ByteReader(bytes)
            let count = Int(try r.u32())
            // A delete takes at least 6 bytes: a count the bytes cannot hold is damage.
            guard count <= r.remaining / 6 else {
                throw ByteReader.Failure(offset: 0, reason: "\(count) changes do not fit in \(r.remaining) bytes")
            }
            var changes: [Change] = []
            changes.reserveCapacity(count)
            for _ in 0..<count {
                let op = try r.u8()
                guard op <= 2 else { throw ByteReader.Failure(offset: r.offset - 1, reason: "unknown op \(op)") }
                let key = try readKey(&r)
                switch op {
                case 0, 2:
                    let lat = try r.f64()
                    let lon = try r.f64()
                    var properties: [String: PropertyValue] = [:]
                    for _ in 0..<Int(try r.u16()) {
                        let name = try r.string()
                        properties[name] = op == 0 ? .string(try r.string()) : try PropertyValueCoding.read(&r)
                    }
                    changes.append(.upsert(key, lat: lat, lon: lon, properties: properties))
                default:
                    changes.append(.delete(key))
                }
            }
            guard r.remaining == 0 else {
                throw ByteReader.Failure(offset: r.offset, reason: "\(r.remaining) bytes after the last change")
            }
            return changes
        } catch {
            throw SnapshotError(offset: error.offset, reason: error.reason)
        }
    }

    private static func write(_ key: PointKey, _ w: inout ByteWriter) {
        switch key {
        case .number(let n):
            w.u8(0)
            w.u32(n)
        case .name(let name):
            w.u8(1)
            w.u16(UInt16(name.utf8.count))
            w.bytes.append(contentsOf: name.utf8)
        }
    }

    private static func readKey(_ r: inout ByteReader) throws(ByteReader.Failure) -> PointKey {
        switch try r.u8() {
        case 0:
            return .number(try r.u32())
        case 1:
            let n = Int(try r.u16())
            let start = r.offset
            guard let name = String(validating: try r.take(n), as: UTF8.self) else {
                throw ByteReader.Failure(offset: start, reason: "a key is not UTF-8")
            }
            return .name(name)
        case let tag:
            throw ByteReader.Failure(offset: r.offset - 1, reason: "unknown key tag \(tag)")
        }
    }
}
