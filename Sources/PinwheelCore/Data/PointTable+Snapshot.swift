/// A point table as bytes, for the change log's snapshots: everything needed to go on exactly where the
/// table was, including the next id a new name gets.
///
/// Layout (little-endian): "PWPT", format 2, version u64, nextNamedID u32, count u32, column count u32,
/// each column as a string, then per row id u32, lon f64, lat f64 and one cell per column (a
/// ``PropertyValueCoding`` cell); then the name count u32 and per name id u32 and string. A string is a
/// u32 byte count and UTF-8. Format 1, whose cells are strings (empty for none), is still read.
extension PointTable {
    private static let magic: [UInt8] = Array("PWPT".utf8)
    private static let format: UInt32 = 2

    /// The table's snapshot bytes.
    public func snapshotBytes() -> [UInt8] {
        var out = ByteWriter()
        out.bytes.append(contentsOf: PointTable.magic)
        out.u32(PointTable.format)
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
        return out.bytes
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
        guard format == 1 || format == PointTable.format else {
            throw ByteReader.Failure(offset: 4, reason: "format \(format), this build reads \(PointTable.format)")
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
        guard r.remaining == 0 else {
            throw ByteReader.Failure(offset: r.offset, reason: "\(r.remaining) bytes after the end")
        }
        var dataset = Dataset(
            ids: ids, coordinates: coordinates, properties: PropertyTable(columns: columns, values: values),
            version: version)
        dataset.names = names
        self.init(dataset)
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
