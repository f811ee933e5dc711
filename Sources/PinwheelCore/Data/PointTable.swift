/// The live points: a ``Dataset`` that producers' ``Change``s edit in place, and the names of the
/// points producers named by strings.
///
/// Rows have no meaning of their own (a delete moves the last row into the freed one); indexes order
/// points by id, so a table reached through any history clusters exactly like a fresh dataset of the
/// same points.
public struct PointTable: Sendable {
    /// Most distinct property names; an upsert bringing more is refused, since every name costs a
    /// column in every row.
    public static let maxColumns = PropertyTable.maxColumns

    /// The points now; `dataset.version` is the version of the last change applied.
    public private(set) var dataset: Dataset
    /// The row of each id.
    private var rowByID: [UInt32: Int32] = [:]
    /// Ids given to points named by strings, both ways.
    var idByName: [String: UInt32] = [:]
    /// The id the next new name gets, counting up from ``PointKey/firstNamedID`` and skipping ids in use.
    var nextNamedID = PointKey.firstNamedID

    /// A table holding `dataset`'s points, as of `dataset.version`.
    public init(_ dataset: Dataset) {
        self.dataset = dataset
        rowByID.reserveCapacity(dataset.count)
        for (row, id) in dataset.ids.enumerated() { rowByID[id] = Int32(row) }
        // Points a data file named by text ids: a producer's change with the same name reaches them.
        for (id, name) in dataset.names {
            idByName[name] = id
            if id >= nextNamedID { nextNamedID = id == UInt32.max ? PointKey.firstNamedID : id + 1 }
        }
    }

    /// Points held.
    public var count: Int { dataset.count }

    /// The feature id of a key, nil when no point has it.
    public func id(of key: PointKey) -> UInt32? {
        switch key {
        case .number(let n): rowByID[n] != nil ? n : nil
        case .name(let name): idByName[name]
        }
    }

    /// The name of a point a producer named by a string.
    public func name(ofID id: UInt32) -> String? { dataset.names[id] }

    /// Where a point is, nil when no point has the key.
    public func coordinate(of key: PointKey) -> Coordinate? {
        guard let id = id(of: key), let row = rowByID[id] else { return nil }
        return Coordinate(lat: dataset.lat(Int(row)), lon: dataset.lon(Int(row)))
    }

    /// A point as it is now, nil when no point has the id.
    public func record(ofID id: UInt32) -> PointRecord? {
        guard let row = rowByID[id].map(Int.init) else { return nil }
        let width = dataset.properties.columns.count
        return PointRecord(
            position: Coordinate(lat: dataset.lat(row), lon: dataset.lon(row)),
            values: Array(dataset.properties.values[row * width..<(row + 1) * width]),
            revision: dataset.revisions.isEmpty ? 0 : dataset.revisions[row])
    }

    /// Why an upsert would be refused now: it brings property names beyond ``maxColumns``.
    public func problem(with change: Change) -> String? {
        guard case .upsert(_, _, _, let properties) = change else { return nil }
        let columns = dataset.properties.columns
        let new = properties.keys.filter { !columns.contains($0) }.count
        guard columns.count + new > PointTable.maxColumns else { return nil }
        return
            "properties would make \(columns.count + new) distinct property names; at most \(PointTable.maxColumns) are kept"
    }

    /// Applies one change as version `version`. Deleting a key no point has changes nothing; property
    /// names beyond ``maxColumns`` are dropped (the ingest refuses such changes, so this only guards
    /// against a race between two of them).
    public mutating func apply(_ change: Change, version: UInt64) {
        dataset.version = version
        switch change {
        case .upsert(let key, let lat, let lon, let properties):
            if dataset.revisions.count != dataset.count {
                dataset.revisions = [UInt32](repeating: 0, count: dataset.count)
            }
            let id = id(of: key) ?? assignID(key)
            let row: Int
            if let existing = rowByID[id] {
                row = Int(existing)
                dataset.coordinates[2 * row] = lon
                dataset.coordinates[2 * row + 1] = lat
            } else {
                row = dataset.count
                rowByID[id] = Int32(row)
                dataset.ids.append(id)
                dataset.coordinates.append(lon)
                dataset.coordinates.append(lat)
                dataset.properties.values.append(
                    contentsOf: repeatElement(nil, count: dataset.properties.columns.count))
                dataset.revisions.append(0)
            }
            setProperties(properties, row: row)
            dataset.revisions[row] = UInt32(truncatingIfNeeded: version)
        case .delete(let key):
            guard let id = id(of: key), let row = rowByID.removeValue(forKey: id) else { return }
            if case .name(let name) = key {
                idByName[name] = nil
                dataset.names[id] = nil
            }
            removeRow(Int(row))
        }
    }

    private mutating func assignID(_ key: PointKey) -> UInt32 {
        switch key {
        case .number(let n):
            return n
        case .name(let name):
            while rowByID[nextNamedID] != nil { nextNamedID &+= 1 }
            let id = nextNamedID
            nextNamedID = nextNamedID == UInt32.max ? PointKey.firstNamedID : nextNamedID + 1
            idByName[name] = id
            dataset.names[id] = name
            return id
        }
    }

    /// Replaces a row's properties: named columns get their values, the others become empty.
    private mutating func setProperties(_ properties: [String: PropertyValue], row: Int) {
        // New names, in sorted order so replay adds columns exactly as the first run did.
        for name in properties.keys.sorted() where !dataset.properties.columns.contains(name) {
            guard dataset.properties.columns.count < PointTable.maxColumns else { break }
            addColumn(name)
        }
        let table = dataset.properties
        let width = table.columns.count
        guard width > 0 else { return }
        for (c, name) in table.columns.enumerated() {
            dataset.properties.values[row * width + c] = properties[name].flatMap(PropertyValue.cell)
        }
    }

    /// Widens every row by one empty column.
    private mutating func addColumn(_ name: String) {
        let old = dataset.properties
        let width = old.columns.count
        var values: [PropertyValue?] = []
        values.reserveCapacity(dataset.count * (width + 1))
        for row in 0..<dataset.count {
            values.append(contentsOf: old.values[row * width..<(row + 1) * width])
            values.append(nil)
        }
        dataset.properties = PropertyTable(columns: old.columns + [name], values: values)
    }

    /// Moves the last row into `row` and drops the last.
    private mutating func removeRow(_ row: Int) {
        let last = dataset.count - 1
        let width = dataset.properties.columns.count
        if row != last {
            let movedID = dataset.ids[last]
            dataset.ids[row] = movedID
            dataset.coordinates[2 * row] = dataset.coordinates[2 * last]
            dataset.coordinates[2 * row + 1] = dataset.coordinates[2 * last + 1]
            for c in 0..<width {
                dataset.properties.values[row * width + c] = dataset.properties.values[last * width + c]
            }
            rowByID[movedID] = Int32(row)
            if !dataset.revisions.isEmpty { dataset.revisions[row] = dataset.revisions[last] }
        }
        if !dataset.revisions.isEmpty { dataset.revisions.removeLast() }
        dataset.ids.removeLast()
        dataset.coordinates.removeLast(2)
        dataset.properties.values.removeLast(width)
    }
}
