import PinwheelCore

/// One segment file's bytes read record by record, telling intact records from damage without
/// deciding what the damage means (``LogFolder`` does, knowing the versions around it).
///
/// A record is `[u32 length][u32 CRC-32][u64 first version][payload]`, the payload starting with its
/// change count; the CRC covers the version and the payload. A record is intact when all of it is
/// there and its CRC matches.
struct SegmentScan: Sendable, Equatable {
    static let recordHeader = 16

    /// An intact record: its versions and where it lies in the file.
    struct Record: Sendable, Equatable {
        var first: UInt64
        var last: UInt64
        var offset: Int
        var end: Int
    }

    /// What the file holds, in file order: intact records, and damaged stretches each followed by an
    /// intact record.
    enum Item: Sendable, Equatable {
        case record(Record)
        /// Bytes `offset..<end` that are no intact record; an intact record starts at `end`.
        case damaged(offset: Int, end: Int)
    }

    /// Bytes at the end of the file after the last intact record, with no intact record after them.
    struct Tail: Sendable, Equatable {
        var offset: Int
        var bytes: Int
        /// True when they are what an interrupted write leaves: the start of a record whose end never
        /// reached the file, or zeros (blocks a crash allocated but never wrote). False when they are
        /// a whole record whose checksum fails: something changed bytes that were written.
        var torn: Bool
    }

    var items: [Item] = []
    var tail: Tail?
    var size: Int

    /// The intact records.
    var records: [Record] {
        items.compactMap { if case .record(let r) = $0 { r } else { nil } }
    }

    /// Reads `bytes` from the start.
    init(_ bytes: [UInt8]) {
        size = bytes.count
        var offset = 0
        while offset < bytes.count {
            if let record = Self.intact(bytes, at: offset) {
                items.append(.record(record))
                offset = record.end
                continue
            }
            // Damage: an intact record further on means it is not the tail.
            if let next = Self.nextIntact(bytes, after: offset) {
                items.append(.damaged(offset: offset, end: next))
                offset = next
                continue
            }
            tail = Tail(offset: offset, bytes: bytes.count - offset, torn: Self.isTorn(bytes, at: offset))
            break
        }
    }

    /// The intact record at `offset`, if there is one.
    static func intact(_ bytes: [UInt8], at offset: Int) -> Record? {
        guard bytes.count - offset >= recordHeader + 4 else { return nil }
        let length = Int(u32(bytes, offset))
        let end = offset + recordHeader + length
        guard length >= 4, end <= bytes.count else { return nil }
        let crc = u32(bytes, offset + 4)
        guard
            CRC32.checksum(
                bytes[(offset + recordHeader)..<end], continuing: CRC32.checksum(bytes[(offset + 8)..<(offset + 16)]))
                == crc
        else { return nil }
        let first = u64(bytes, offset + 8)
        let count = UInt64(u32(bytes, offset + recordHeader))
        guard first > 0, count > 0 else { return nil }
        return Record(first: first, last: first + count - 1, offset: offset, end: end)
    }

    /// The offset of the first intact record after `offset`, trying every byte.
    private static func nextIntact(_ bytes: [UInt8], after offset: Int) -> Int? {
        var at = offset + 1
        while bytes.count - at >= recordHeader + 4 {
            // Most offsets fail on the length alone, before any checksum.
            let length = Int(u32(bytes, at))
            if length >= 4 && at + recordHeader + length <= bytes.count && intact(bytes, at: at) != nil { return at }
            at += 1
        }
        return nil
    }

    /// Whether the damaged bytes from `offset` to the end are what an interrupted write leaves.
    private static func isTorn(_ bytes: [UInt8], at offset: Int) -> Bool {
        if bytes[offset...].allSatisfy({ $0 == 0 }) { return true }
        guard bytes.count - offset >= recordHeader else { return true }
        let length = Int(u32(bytes, offset))
        guard offset + recordHeader + length > bytes.count else { return false }
        // A length past the end is a tear, unless the bytes that are there make a whole record with
        // a matching checksum: then only the length field was damaged.
        let crc = u32(bytes, offset + 4)
        return CRC32.checksum(
            bytes[(offset + recordHeader)...], continuing: CRC32.checksum(bytes[(offset + 8)..<(offset + 16)]))
            != crc
    }

    private static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        var r = ByteReader(bytes[at..<at + 4])
        return (try? r.u32()) ?? 0
    }

    private static func u64(_ bytes: [UInt8], _ at: Int) -> UInt64 {
        var r = ByteReader(bytes[at..<at + 8])
        return (try? r.u64()) ?? 0
    }
}
