/// CRC-32 (IEEE 802.3, as zlib and gzip compute it), to tell a torn or damaged record from a whole one.
public enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The checksum of `bytes`, continuing from `crc` (0 to start).
    public static func checksum(_ bytes: ArraySlice<UInt8>, continuing crc: UInt32 = 0) -> UInt32 {
        var c = ~crc
        table.withUnsafeBufferPointer { t in
            bytes.withUnsafeBufferPointer { b in
                for byte in b { c = t[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8) }
            }
        }
        return ~c
    }

    /// The checksum of a whole array.
    public static func checksum(_ bytes: [UInt8], continuing crc: UInt32 = 0) -> UInt32 {
        checksum(bytes[...], continuing: crc)
    }
}
