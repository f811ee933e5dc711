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
    /// - Complexity: O(points × size of the filter).
    public func filtered(by filter: FilterExpression) -> Dataset {
        let bound = BoundFilter(filter, columns: properties.columns)
        let width = properties.columns.count
        var ids: [UInt32] = []
        var coordinates: [Double] = []
        var values: [PropertyValue?] = []
        var kept: [UInt32] = []
        for row in 0..<count {
            let cells = properties.values[row * width..<(row + 1) * width]
            guard bound.matches(PropertyCells(cells)) else { continue }
            ids.append(self.ids[row])
            coordinates.append(lon(row))  // x at 2i
            coordinates.append(lat(row))  // y at 2i+1
            values.append(contentsOf: cells)
            if !revisions.isEmpty { kept.append(revisions[row]) }
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
}
