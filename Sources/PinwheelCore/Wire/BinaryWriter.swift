/// Appends the numbers and strings of `pinwheel.v1+bin` (docs/protocol.md, "Numbers") to a byte
/// buffer the caller reuses.
public struct BinaryWriter: Sendable {
    /// The bytes written so far.
    public var bytes: [UInt8]

    /// Values a varint holds: 8 bytes of 7 bits.
    public static let varintLimit: UInt64 = 1 << 56

    public init(capacity: Int = 4096) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Empties the buffer, keeping its capacity.
    public mutating func reset() { bytes.removeAll(keepingCapacity: true) }

    @inlinable public mutating func byte(_ b: UInt8) { bytes.append(b) }

    /// LEB128: 7 bits a byte, least significant group first, the high bit set on all but the last.
    @inlinable public mutating func varint(_ value: UInt64) {
        precondition(value < Self.varintLimit, "a varint holds values below 2^56")
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// The bytes ``varint(_:)`` takes for `value`.
    @inlinable public static func varintLength(_ value: UInt64) -> Int {
        max(1, (64 - value.leadingZeroBitCount + 6) / 7)
    }

    /// `n` as the varint of `2n` (n ≥ 0) or `−2n − 1` (n < 0).
    @inlinable public mutating func zigzag(_ n: Int64) {
        varint(Self.zigzag(n))
    }

    @inlinable public static func zigzag(_ n: Int64) -> UInt64 {
        UInt64(bitPattern: (n << 1) ^ (n >> 63))
    }

    /// An IEEE 754 double, little-endian.
    @inlinable public mutating func f64(_ d: Double) {
        var bits = d.bitPattern
        for _ in 0..<8 {
            bytes.append(UInt8(truncatingIfNeeded: bits))
            bits >>= 8
        }
    }

    /// A varint byte length, then the UTF-8 bytes.
    public mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            varint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }
}
