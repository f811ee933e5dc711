import PinwheelCore
import Synchronization

/// Clusterers over only the points a scope allows, one set per distinct scope, shared by the
/// sessions with that scope and rebuilt when the data has changed since: a scoped session's counts,
/// positions and aggregates are those of a server holding just its points, so nothing of another
/// tenant reaches it, not even as a count.
final class ScopedClusterers: Sendable {
    private struct Entry {
        var version: UInt64
        var clusterers: Clusterers
        var points: Int
    }

    /// A row of properties kept as text, as a filter reads it: an empty cell is a missing property.
    struct TextRow: FilterRow {
        let table: PropertyTable
        let row: Int

        func value(column: Int) -> PropertyValue? {
            let text = table.value(row: row, column: column)
            return text.isEmpty ? nil : .string(text)
        }
    }

    private let options: ClusterOptions
    private let aggregates: [Aggregate]
    private let entries = Mutex<[String: Entry]>([:])

    init(options: ClusterOptions, aggregates: [Aggregate]) {
        self.options = options
        self.aggregates = aggregates
    }

    /// The clusterer of `algorithm` over `data`'s points that `filter` lets through, built when the
    /// cached one is of another version. Any thread.
    /// - Parameter data: the points now, read only when a build is due.
    func clusterer(
        filter: EffectiveFilter, algorithm: Algorithm, version: UInt64, data: () -> Dataset
    ) -> any Clusterer {
        if let entry = entries.withLock({ $0[filter.key] }), entry.version == version {
            return entry.clusterers.clusterer(for: algorithm)
        }
        let subset = filter.expression.map { Self.subset(of: data(), keeping: $0) } ?? data()
        // A build over a subset of points that built whole cannot fail on its options or columns.
        let built = (try? Clusterers(dataset: subset, options: options, aggregates: aggregates))!
        entries.withLock { $0[filter.key] = Entry(version: version, clusterers: built, points: subset.count) }
        return built.clusterer(for: algorithm)
    }

    /// The rows of `dataset` that `filter` keeps, in their order, with their names and revisions.
    static func subset(of dataset: Dataset, keeping filter: FilterExpression) -> Dataset {
        let bound = BoundFilter(filter, columns: dataset.properties.columns)
        var ids: [UInt32] = []
        var coordinates: [Double] = []
        var values: [String] = []
        var revisions: [UInt32] = []
        let width = dataset.properties.columns.count
        for row in 0..<dataset.count where bound.matches(TextRow(table: dataset.properties, row: row)) {
            ids.append(dataset.ids[row])
            coordinates.append(dataset.lon(row))
            coordinates.append(dataset.lat(row))
            values.append(contentsOf: dataset.properties.values[row * width..<(row + 1) * width])
            if !dataset.revisions.isEmpty { revisions.append(dataset.revisions[row]) }
        }
        var subset = Dataset(
            ids: ids, coordinates: coordinates,
            properties: PropertyTable(columns: dataset.properties.columns, values: values), version: dataset.version)
        subset.revisions = revisions
        if !dataset.names.isEmpty {
            let kept = Set(ids)
            subset.names = dataset.names.filter { kept.contains($0.key) }
        }
        return subset
    }
}
