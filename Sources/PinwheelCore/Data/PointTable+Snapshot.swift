/// A point table as bytes, for the change log's snapshots: everything needed to go on exactly where the
/// table was, including the next id a new name gets.
///
/// Layout (little-endian): "PWPT", format, version u64, nextNamedID u32, count u32, column count u32,
/// each column as a string, then per row id u32, lon f64, lat f64 and one cell per column (a
/// ``PropertyValueCoding`` cell); then the name count u32 and per name id u32 and string. Format 3
/// goes on with the observation times: their count u32 and per point its key and time u64, sorted by
/// key; then the tombstones' count u32 and per tombstone its key and time u64, oldest first. A string
/// is a u32 byte count and UTF-8; a key is written as the change log writes it (``ChangeCodec``).
///
/// A table without observation times is written in format 2. Format 1, whose cells are strings (empty
/// for none), is what earlier builds wrote and is still read.
extension PointTable {
    private static let magic: [UInt8] = Array("PWPT".utf8)
    /// The formats this build reads; it writes 2 for a table without observation times, else 3.
    private static let formats: ClosedRange<UInt32> = 1...3

    /// The table's snapshot bytes.
    public func snapshotBytes() -> [UInt8] {
        var out = ByteWriter()
        let tombstones = observations.tombstonesInOrder
        let format = observations.times.isEmpty && tombstones.isEmpty ? 2 : 3
        out.bytes.append(contentsOf: PointTable.magic)
        out.u32(UInt32(format))
        out.u64(dataset.version)
        out.u32(nextNamedID)
        out.u32(UInt32(dataset.count))
        let columns = dataset.properties.columns
        out.u32(UInt32(columns.count))
        for c in columns { out.string(c) }
        for row in 0..<dataset.count {
            out.u32(dataset.ids[row])
            out.f64(dataset.lon(row))
            out.f64(dataset.lat(row))
            for c in 0..<columns.count {
                PropertyValueCoding.write(cell: dataset.properties.value(row: row, column: c), &out)
            }
        }
        out.u32(UInt32(dataset.names.count))
        for (id, name) in dataset.names.sorted(by: { $0.key < $1.key }) {
            out.u32(id)
            out.string(name)
        }
        guard format == 3 else { return out.bytes }
        out.u32(UInt32(observations.times.count))
        for (key, time) in observations.times.sorted(by: { PointTable.precedes($0.key, $1.key) }) {
            ChangeCodec.write(key, &out)
            out.u64(time)
        }
        out.u32(UInt32(tombstones.count))
        for (key, time) in tombstones {
            ChangeCodec.write(key, &out)
            out.u64(time)
        }
        return out.bytes
    }

    /// Numbers first, in order, then names in byte order: one order in every process.
    private static func precedes(_ a: PointKey, _ b: PointKey) -> Bool {
        switch (a, b) {
        case (.number(let x), .number(let y)): x < y
        case (.number, .name): true
        case (.name, .number): false
        case (.name(let x), .name(let y)): x.utf8.lexicographicallyPrecedes(y.utf8)
        }
    }

    /// Reads a table back from ``snapshotBytes()``.
    /// - Throws: ``SnapshotError`` naming what is wrong when the bytes are not such a snapshot.
    public init(snapshot bytes: [UInt8]) throws(SnapshotError) {
        do throws(ByteReader.Failure) {
            try self.init(reading: bytes)
        } catch {
            throw SnapshotError(offset: error.offset, reason: error.reason)
        }
    }

    private init(reading bytes: [UInt8]) throws(ByteReader.Failure) {
        var r = ByteReader(bytes[...])
        guard Array(try r.take(4)) == PointTable.magic else {
            throw ByteReader.Failure(offset: 0, reason: "not a point table")
        }
        let format = try r.u32()
        guard PointTable.formats.contains(format) else {
            throw ByteReader.Failure(
                offset: 4,
                reason:
                    "format \(format), this build reads formats \(PointTable.formats.lowerBound) to \(PointTable.formats.upperBound) (written by a newer build?)"
            )
        }
        let version = try r.u64()
        let nextNamedID = try r.u32()
        let count = Int(try r.u32())
        let columnCount = Int(try r.u32())
        // Each row takes at least 20 bytes: a count the rest of the bytes cannot hold is damage.
        guard count <= r.remaining / 20, columnCount <= PointTable.maxColumns else {
            throw ByteReader.Failure(offset: r.offset, reason: "\(count) rows of \(columnCount) columns do not fit")
        }
        var columns: [String] = []
        for _ in 0..<columnCount { columns.append(try r.string()) }
        var ids = [UInt32](repeating: 0, count: count)
        var coordinates = [Double](repeating: 0, count: 2 * count)
        var values: [PropertyValue?] = []
        values.reserveCapacity(count * columnCount)
        for row in 0..<count {
            ids[row] = try r.u32()
            coordinates[2 * row] = try r.f64()
            coordinates[2 * row + 1] = try r.f64()
            for _ in 0..<columnCount {
                values.append(
                    format == 1
                        ? PropertyValue.cell(.string(try r.string())) : try PropertyValueCoding.readCell(&r))
            }
        }
        var names: [UInt32: String] = [:]
        let nameCount = Int(try r.u32())
        guard nameCount <= r.remaining / 8 else {
            throw ByteReader.Failure(offset: r.offset, reason: "\(nameCount) names do not fit")
        }
        for _ in 0..<nameCount {
            let id = try r.u32()
            names[id] = try r.string()
        }
        var observations = Observations(capacity: PointTable.keptTombstones)
        if format == 3 {
            // A key and a time take at least 12 bytes (a one-byte name: tag, length, byte; the time).
            let timeCount = Int(try r.u32())
            guard timeCount <= r.remaining / 12 else {
                throw ByteReader.Failure(offset: r.offset, reason: "\(timeCount) observation times do not fit")
            }
            for _ in 0..<timeCount {
                let key = try ChangeCodec.readKey(&r)
                observations.restore(time: try r.u64(), of: key)
            }
            let tombstoneCount = Int(try r.u32())
            guard tombstoneCount <= r.remaining / 12 else {
                throw ByteReader.Failure(offset: r.offset, reason: "\(tombstoneCount) tombstones do not fit")
            }
            for _ in 0..<tombstoneCount {
                let key = try ChangeCodec.readKey(&r)
                observations.restore(tombstone: try r.u64(), of: key)
            }
        }
        guard r.remaining == 0 else {
            throw ByteReader.Failure(offset: r.offset, reason: "\(r.remaining) bytes after the end")
        }
        var dataset = Dataset(
            ids: ids, coordinates: coordinates, properties: PropertyTable(columns: columns, values: values),
            version: version)
        dataset.names = names
        self.init(dataset)
        self.observations = observations
        self.nextNamedID = nextNamedID
        for (id, name) in names { idByName[name] = id }
    }
}

/// Why bytes are not a point-table snapshot.
public struct SnapshotError: Error, Equatable, Sendable, CustomStringConvertible {
    public var offset: Int
    public var reason: String

    public var description: String { "snapshot damaged at byte \(offset): \(reason)" }
}
