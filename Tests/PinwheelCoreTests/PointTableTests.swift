import Testing

@testable import PinwheelCore

@Suite("Point table")
struct PointTableTests {
    static let base = Dataset(
        ids: [10, 20, 30], coordinates: [4.9, 52.4, 2.35, 48.86, 13.4, 52.52],
        properties: PropertyTable(columns: ["name"], values: ["Amsterdam", "Paris", "Berlin"]))

    @Test("an upsert of a new integer key adds a point with that id; of a known one moves it")
    func upsertNumbers() {
        var table = PointTable(Self.base)
        table.apply(.upsert(.number(40), lat: 50.85, lon: 4.35, properties: ["name": "Brussels"]), version: 1)
        table.apply(.upsert(.number(10), lat: 52.0, lon: 5.0, properties: [:]), version: 2)
        #expect(table.count == 4 && table.dataset.version == 2)
        #expect(table.coordinate(of: .number(40)) == Coordinate(lat: 50.85, lon: 4.35))
        #expect(table.coordinate(of: .number(10)) == Coordinate(lat: 52.0, lon: 5.0))
        let row = table.dataset.ids.firstIndex(of: 10)!
        #expect(table.dataset.properties.value(row: row, column: 0) == nil, "an upsert replaces every property")
    }

    @Test("a string key gets an id from 2^31 up, kept while the point lives and written in the dataset's names")
    func names() {
        var table = PointTable(Self.base)
        table.apply(.upsert(.name("bus-12"), lat: 1, lon: 2, properties: [:]), version: 1)
        table.apply(.upsert(.name("bus-13"), lat: 3, lon: 4, properties: [:]), version: 2)
        table.apply(.upsert(.name("bus-12"), lat: 5, lon: 6, properties: [:]), version: 3)
        #expect(table.id(of: .name("bus-12")) == PointKey.firstNamedID)
        #expect(table.id(of: .name("bus-13")) == PointKey.firstNamedID + 1)
        #expect(table.dataset.names[PointKey.firstNamedID] == "bus-12")
        #expect(table.coordinate(of: .name("bus-12")) == Coordinate(lat: 5, lon: 6))
        table.apply(.delete(.name("bus-12")), version: 4)
        #expect(table.id(of: .name("bus-12")) == nil && table.dataset.names[PointKey.firstNamedID] == nil)
        #expect(table.count == 4)
    }

    @Test("a delete moves the last row into the freed one; deleting an unknown key changes nothing")
    func deletes() {
        var table = PointTable(Self.base)
        table.apply(.delete(.number(10)), version: 1)
        table.apply(.delete(.number(99)), version: 2)
        #expect(table.count == 2 && table.dataset.version == 2)
        #expect(Set(table.dataset.ids) == [20, 30])
        let berlin = table.dataset.ids.firstIndex(of: 30)!
        #expect(table.dataset.properties.value(row: berlin, column: 0) == "Berlin")
        #expect(table.coordinate(of: .number(30)) == Coordinate(lat: 52.52, lon: 13.4))
    }

    @Test("new property names become columns, empty in other rows; past maxColumns an upsert is refused")
    func columns() {
        var table = PointTable(Self.base)
        table.apply(
            .upsert(.number(20), lat: 48.86, lon: 2.35, properties: ["name": "Paris", "line": "4"]), version: 1)
        #expect(table.dataset.properties.columns == ["name", "line"])
        let paris = table.dataset.ids.firstIndex(of: 20)!
        #expect(table.dataset.properties.value(row: paris, column: 1) == "4")
        #expect(table.dataset.properties.value(row: table.dataset.ids.firstIndex(of: 30)!, column: 1) == nil)
        var many: [String: PropertyValue] = [:]
        for c in 0..<PointTable.maxColumns { many["c\(c)"] = "x" }
        let problem = table.problem(with: .upsert(.number(1), lat: 0, lon: 0, properties: many))
        #expect(problem?.contains("at most \(PointTable.maxColumns)") == true)
        #expect(table.problem(with: .upsert(.number(1), lat: 0, lon: 0, properties: ["name": "x"])) == nil)
    }
}

@Suite("Point table snapshots")
struct PointTableSnapshotTests {
    @Test("a snapshot reads back to a table that goes on exactly as the original would")
    func roundTrip() throws {
        var table = PointTable(PointTableTests.base)
        table.apply(.upsert(.name("bus-12"), lat: 1, lon: 2, properties: ["line": "12", "ü": "ß"]), version: 1)
        table.apply(.upsert(.name("bus-13"), lat: 3, lon: 4, properties: [:]), version: 2)
        table.apply(.delete(.name("bus-12")), version: 3)
        var copy = try PointTable(snapshot: table.snapshotBytes())
        #expect(copy.snapshotBytes() == table.snapshotBytes())
        #expect(copy.dataset.version == 3 && copy.dataset.names == table.dataset.names)
        for change in [Change.upsert(.name("bus-14"), lat: 5, lon: 6, properties: [:]), .delete(.number(20))] {
            table.apply(change, version: 4)
            copy.apply(change, version: 4)
        }
        #expect(copy.snapshotBytes() == table.snapshotBytes())
        #expect(copy.id(of: .name("bus-14")) == table.id(of: .name("bus-14")))
    }

    @Test("every truncation and a wrong magic are refused with a reason")
    func damage() throws {
        var table = PointTable(PointTableTests.base)
        table.apply(.upsert(.name("bus-12"), lat: 1, lon: 2, properties: ["line": "12"]), version: 1)
        let bytes = table.snapshotBytes()
        for n in 0..<bytes.count {
            #expect(throws: SnapshotError.self) { try PointTable(snapshot: Array(bytes[..<n])) }
        }
        var wrong = bytes
        wrong[0] = 0
        #expect(throws: SnapshotError(offset: 0, reason: "not a point table")) { try PointTable(snapshot: wrong) }
    }
}
