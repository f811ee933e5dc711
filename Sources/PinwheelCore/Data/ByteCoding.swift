/// Little-endian bytes for the change log's records and snapshots.
public struct ByteWriter: Sendable {
    public var bytes: [UInt8] = []

    public init() {}

    public mutating func u8(_ v: UInt8) { bytes.append(v) }
    public mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    public mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    public mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    public mutating func f64(_ v: Double) { u64(v.bitPattern) }

    /// A u32 byte count, then UTF-8.
    public mutating func string(_ s: String) {
        u32(UInt32(s.utf8.count))
        bytes.append(contentsOf: s.utf8)
    }
}

/// Reads what ``ByteWriter`` wrote; every read checks that the bytes are there, so a damaged length
/// is an error, never a crash or an allocation of its size.
public struct ByteReader {
    /// Why the bytes ended early or held something impossible, and where.
    public struct Failure: Error, Equatable {
        public var offset: Int
        public var reason: String
    }

    public let bytes: ArraySlice<UInt8>
    public private(set) var offset: Int

    public init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        offset = bytes.startIndex
    }

    public var remaining: Int { bytes.endIndex - offset }

    public mutating func take(_ n: Int) throws(Failure) -> ArraySlice<UInt8> {
        guard n >= 0, n <= remaining else { throw Failure(offset: offset, reason: "ends early") }
        defer { offset += n }
        return bytes[offset..<offset + n]
    }

    public mutating func u8() throws(Failure) -> UInt8 { try take(1).first! }
    public mutating func u16() throws(Failure) -> UInt16 { try load(UInt16.self) }
    public mutating func u32() throws(Failure) -> UInt32 { try load(UInt32.self) }
    public mutating func u64() throws(Failure) -> UInt64 { try load(UInt64.self) }

    private mutating func load<T: FixedWidthInteger>(_: T.Type) throws(Failure) -> T {
        let slice = try take(MemoryLayout<T>.size)
        return T(littleEndian: slice.withUnsafeBytes { $0.loadUnaligned(as: T.self) })
    }
    public mutating func f64() throws(Failure) -> Double { Double(bitPattern: try u64()) }

    public mutating func string() throws(Failure) -> String {
        let n = Int(try u32())
        let start = offset
        guard let s = String(validating: try take(n), as: UTF8.self) else {
            throw Failure(offset: start, reason: "a string is not UTF-8")
        }
        return s
    }
}
