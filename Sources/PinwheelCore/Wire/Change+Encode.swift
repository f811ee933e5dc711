/// Writing changes as producers send them, one JSON object per line.
extension Change {
    /// The change as one NDJSON line, without the newline; ``Change/decode(_:)-(UnsafeBufferPointer<UInt8>)``
    /// reads it back.
    public func encode(into w: inout JSONWriter) {
        switch self {
        case .upsert(let key, let lat, let lon, let properties):
            w.raw("{\"op\":\"upsert\",\"id\":")
            Change.write(key, into: &w)
            w.raw(",\"lat\":")
            w.number(lat)
            w.raw(",\"lon\":")
            w.number(lon)
            if !properties.isEmpty {
                w.raw(",\"properties\":{")
                for (k, (name, value)) in properties.sorted(by: { $0.key < $1.key }).enumerated() {
                    if k > 0 { w.byte(UInt8(ascii: ",")) }
                    w.string(name)
                    w.byte(UInt8(ascii: ":"))
                    value.write(into: &w)
                }
                w.byte(UInt8(ascii: "}"))
            }
            w.byte(UInt8(ascii: "}"))
        case .delete(let key):
            w.raw("{\"op\":\"delete\",\"id\":")
            Change.write(key, into: &w)
            w.byte(UInt8(ascii: "}"))
        }
    }

    private static func write(_ key: PointKey, into w: inout JSONWriter) {
        switch key {
        case .number(let n): w.integer(UInt64(n))
        case .name(let name): w.string(name)
        }
    }
}
