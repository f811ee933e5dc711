/// Gathering features into a dataset, properties laid out as row-major columns as they are read.
extension GeoJSONParser {
    /// Accumulates features. Property values go straight into the row-major table, so memory stays
    /// that of the finished dataset; a column first seen late widens the table once.
    struct Collector {
        var builder: DatasetBuilder
        var columns: [String] = []
        var columnIndex: [String: Int] = [:]
        /// Features with `"geometry": null`.
        var unlocated = 0
        /// Text ids already used, to refuse a repeated one.
        var textIDs = Set<String>()
        /// The current row's values, one per column; reused.
        var row: [PropertyValue?] = []

        init(badRows: BadRowPolicy) { builder = DatasetBuilder(badRows: badRows) }

        /// Adds one feature, or rejects it under the bad-row policy.
        /// - Parameters:
        ///   - value: the parsed feature.
        ///   - index: its position among all features, its id when it has no usable numeric one.
        ///   - line: where it starts.
        ///   - path: its JSON path for errors.
        mutating func add(_ value: JSONValue, index: Int, line: Int, path: String) throws(DataError) {
            do throws(DataError) {
                let feature = try GeoJSONFeature(value, line: line, path: path)
                guard let location = feature.location else {
                    unlocated += 1
                    return
                }
                let id = feature.numericID ?? UInt32(truncatingIfNeeded: index)
                if let text = feature.textID, textIDs.contains(text) {
                    throw .duplicateID(line: line, column: "\(path).id", value: "\"\(text)\"")
                }
                try builder.claim(id: id, line: line, column: "\(path).id")
                if let text = feature.textID { textIDs.insert(text) }
                row.removeAll(keepingCapacity: true)
                row.append(contentsOf: repeatElement(nil, count: columns.count))
                if let properties = feature.properties {
                    // Every distinct name costs a cell in every row: sparse names must not grow the
                    // table as rows times names.
                    let new = properties.members.keys.count { columnIndex[$0] == nil }
                    if columns.count + new > PropertyTable.maxColumns {
                        throw .invalidFeature(
                            line: line, column: "\(path).properties",
                            reason: "a dataset may have at most \(PropertyTable.maxColumns) distinct property names")
                    }
                    // Sorted, so the column order does not depend on dictionary order.
                    for key in properties.members.keys.sorted() {
                        let c = column(for: key)
                        row[c] = PropertyValue(json: properties.members[key]!)
                    }
                }
                // The top-level id wins over a property of the same name: it is what the feature is called.
                if let text = feature.textID {
                    let c = column(for: "id")
                    row[c] = PropertyValue.cell(.string(text))
                }
                builder.append(id: id, lat: location.lat, lon: location.lon)
                builder.values.append(contentsOf: row)
            } catch {
                try builder.reject(error)
            }
        }

        /// The column of a property key, adding it (and an empty cell to every row so far) when new.
        private mutating func column(for key: String) -> Int {
            if let c = columnIndex[key] { return c }
            let old = columns.count
            columns.append(key)
            columnIndex[key] = old
            row.append(nil)
            let rows = builder.ids.count
            if rows > 0 {
                var wider: [PropertyValue?] = []
                wider.reserveCapacity(rows * (old + 1))
                for r in 0..<rows {
                    wider.append(contentsOf: builder.values[r * old..<(r + 1) * old])
                    wider.append(nil)
                }
                builder.values = wider
            }
            return old
        }

        func finish() -> ParsedDataset {
            var parsed = builder.finish(columns: columns)
            parsed.unlocated = unlocated
            return parsed
        }
    }
}
