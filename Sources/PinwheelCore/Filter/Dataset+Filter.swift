/// One point's property cells as a filter reads them; a column past the cells is no value.
public struct PropertyCells: FilterRow {
    public let cells: ArraySlice<PropertyValue?>

    public init(_ cells: ArraySlice<PropertyValue?>) { self.cells = cells }

    @inlinable public func value(column: Int) -> PropertyValue? {
        let i = cells.startIndex + column
        return i < cells.endIndex ? cells[i] : nil
    }
}

extension Dataset {
    /// The points that pass `filter`, each with its id, position, properties, name and revision: the
    /// dataset a server loaded with just those points would hold (an index orders points by id, so the
    /// row order does not matter).
    /// - Complexity: O(points × size of the filter), the selection over the cores.
    public func filtered(by filter: FilterExpression) -> Dataset {
        filtered(rows: rows(passing: filter))
    }

    /// The points at `rows` (``rows(passing:)``'s), as ``filtered(by:)`` copies them: a caller that
    /// counted the points first does not select them twice.
    /// - Complexity: O(rows × property columns).
    public func filtered(rows: [Int]) -> Dataset {
        let width = properties.columns.count
        var ids: [UInt32] = []
        var coordinates: [Double] = []
        var values: [PropertyValue?] = []
        var kept: [UInt32] = []
        ids.reserveCapacity(rows.count)
        coordinates.reserveCapacity(2 * rows.count)
        values.reserveCapacity(width * rows.count)
        if !revisions.isEmpty { kept.reserveCapacity(rows.count) }
        properties.values.withUnsafeBufferPointer { cells in
            for row in rows {
                ids.append(self.ids[row])
                coordinates.append(lon(row))  // x at 2i
                coordinates.append(lat(row))  // y at 2i+1
                // A row short of cells (a column added after it) reads nil there.
                for c in 0..<width { values.append(row * width + c < cells.count ? cells[row * width + c] : nil) }
                if !revisions.isEmpty { kept.append(revisions[row]) }
            }
        }
        var subset = Dataset(
            ids: ids, coordinates: coordinates,
            properties: PropertyTable(columns: properties.columns, values: values), version: version)
        subset.revisions = kept
        if !names.isEmpty {
            for id in ids { if let name = names[id] { subset.names[id] = name } }
        }
        return subset
    }
}

extension ChangedPoint {
    /// The change as an index over the points passing `filter` sees it: a point that passes is as it
    /// is now, one that does not (any more) is gone from it.
    public func filtered(by filter: BoundFilter) -> ChangedPoint {
        guard let now, filter.matches(PropertyCells(now.values[...])) else { return ChangedPoint(id: id, now: nil) }
        return self
    }

    /// False when the point passed `filter` neither before the change nor after it: an index over the
    /// points passing it holds the point at neither moment, and the change is nothing to it.
    public func concerns(_ filter: BoundFilter) -> Bool {
        if let now, filter.matches(PropertyCells(now.values[...])) { return true }
        switch prior {
        case .unknown: return true
        case .absent: return false
        case .values(let values): return filter.matches(PropertyCells(values[...]))
        }
    }
}

extension Dataset {
    /// The rows that pass `filter`, in order: the selection ``filtered(by:)`` copies.
    /// - Complexity: O(points × leaves of the filter), over the cores.
    public func rows(passing filter: FilterExpression) -> [Int] {
        FilterScan.rows(passing: BoundFilter(filter, columns: properties.columns), table: properties, count: count)
    }
}

extension Clusterer {
    /// Roughly the bytes the index holds: its own arrays (a live index's delta's included), and its
    /// points' ids, coordinates and property cells. What a server counts against its filter memory,
    /// and how a filtered index is compared with the full one.
    public var estimatedBytes: Int {
        let delta = (self as? LiveClusterIndex)?.delta
        let built = (self as? ClusterIndex) ?? delta?.base
        let own = (built?.storedBytes ?? pointCount * 64) + (delta?.storedBytes ?? 0)
        return own + dataset.count * (4 + 16) + dataset.properties.values.count * MemoryLayout<PropertyValue?>.stride
    }
}
