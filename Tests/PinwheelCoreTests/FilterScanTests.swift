import Testing

@testable import PinwheelCore

@Suite("Filter column scan")
struct FilterScanTests {
    /// A table of random properties (some missing, some rows short of a column added later).
    static func table(_ random: inout SeededRandom, rows: Int) -> PropertyTable {
        var values: [PropertyValue?] = []
        for _ in 0..<rows {
            let p = RandomFilter.properties(&random)
            for name in RandomFilter.names { values.append(p[name]) }
        }
        return PropertyTable(columns: RandomFilter.names, values: values)
    }

    @Test("the rows a column scan finds are those the expression passes row by row, for random filters")
    func agreesWithRowByRow() {
        var random = SeededRandom(seed: 47)
        for round in 0..<300 {
            // Past Parallel.minimumItems now and then, so the rows are split over the cores.
            let rows = round % 50 == 0 ? 140_000 : 1 + Int(random.next() % 300)
            let table = Self.table(&random, rows: rows)
            let filter = RandomFilter.make(&random, depth: 3)
            let bound = BoundFilter(filter, columns: table.columns)
            let width = table.columns.count
            let expected = (0..<rows).filter { r in
                bound.matches(PropertyCells(table.values[r * width..<(r + 1) * width]))
            }
            let found = FilterScan.rows(passing: bound, table: table, count: rows)
            #expect(found == expected, "\(filter.text) over \(rows) rows")
        }
    }

    @Test("a filter over a property no row has, and the constants")
    func edges() {
        var random = SeededRandom(seed: 5)
        let table = Self.table(&random, rows: 130)
        func rows(_ f: FilterExpression) -> [Int] {
            FilterScan.rows(passing: BoundFilter(f, columns: table.columns), table: table, count: 130)
        }
        #expect(rows(.constant(true)) == Array(0..<130))
        #expect(rows(.constant(false)).isEmpty)
        #expect(rows(.has("nobody")).isEmpty)
        #expect(rows(.not(.has("nobody"))) == Array(0..<130))
        #expect(rows(.compare(.equal, .get("nobody"), .literal(nil))) == Array(0..<130))
        #expect(rows(.compare(.less, .get("nobody"), .literal(.number(3)))).isEmpty)
    }

    @Test("a filtered dataset holds the passing points with their properties, names and revisions")
    func filteredDataset() {
        var generator = SyntheticGenerator(seed: 2)
        generator.tenants = 4
        var data = generator.dataset(count: 5_000)
        data.revisions = (0..<5_000).map { UInt32($0 * 3) }
        data.names[7] = "seven"
        let filter = FilterExpression.compare(.equal, .get("tenant"), .literal("t1"))
        let subset = data.filtered(by: filter)
        let rows = data.rows(passing: filter)
        #expect(subset.ids == rows.map { data.ids[$0] })
        #expect(subset.revisions == rows.map { UInt32($0 * 3) })
        #expect(subset.properties.values.count == rows.count * 2)
        #expect((0..<subset.count).allSatisfy { subset.properties.value(row: $0, column: 0) == "t1" })
        #expect(subset.names == (rows.contains(7) ? [7: "seven"] : [:]))
    }
}
