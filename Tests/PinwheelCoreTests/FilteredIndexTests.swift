import Testing

@testable import PinwheelCore

@Suite("Filtered indexes")
struct FilteredIndexTests {
    static let aggregates = [
        Aggregate(name: "distance", operation: .sum, column: "km"),
        Aggregate(name: "longest", operation: .max, column: "km"),
    ]

    /// Points around a few centres, so they cluster, each with every kind of property (some missing).
    static func dataset(_ random: inout SeededRandom, count: Int) -> Dataset {
        var ids = Array(0..<UInt32(count * 3)).shuffled(using: &random).prefix(count).map { $0 }
        ids.sort { _, _ in random.next() % 2 == 0 }
        var coordinates: [Double] = []
        var values: [PropertyValue?] = []
        for _ in 0..<count {
            let centre = Int(random.next() % 4)
            coordinates.append(Double(centre) * 20 - 30 + Double(random.next() % 1000) / 100)
            coordinates.append(Double(centre) * 10 - 15 + Double(random.next() % 1000) / 100)
            let p = RandomFilter.properties(&random)
            for name in RandomFilter.names { values.append(p[name]) }
            values.append(random.next() % 5 == 0 ? nil : .number(Double(random.next() % 120)))
        }
        var d = Dataset(
            ids: ids, coordinates: coordinates,
            properties: PropertyTable(columns: RandomFilter.names + ["km"], values: values))
        // Some points named by strings, as producers and text ids name them.
        for id in ids where id % 7 == 0 { d.names[id] = "veh-\(id)" }
        return d
    }

    /// The points passing `filter`, picked by evaluating each point's properties by name and written
    /// into a dataset of their own in reverse order: what a server loaded with just those points holds.
    static func oracle(_ data: Dataset, _ filter: FilterExpression) -> Dataset {
        let columns = data.properties.columns
        var ids: [UInt32] = []
        var coordinates: [Double] = []
        var values: [PropertyValue?] = []
        for row in (0..<data.count).reversed() {
            var p: [String: PropertyValue] = [:]
            for (c, name) in columns.enumerated() { p[name] = data.properties.value(row: row, column: c) }
            guard filter.matches(p) else { continue }
            ids.append(data.ids[row])
            coordinates += [data.lon(row), data.lat(row)]
            values += columns.indices.map { data.properties.value(row: row, column: $0) }
        }
        var d = Dataset(
            ids: ids, coordinates: coordinates, properties: PropertyTable(columns: columns, values: values))
        d.names = data.names.filter { ids.contains($0.key) }
        return d
    }

    /// Every feature at a zoom over the whole world, by id.
    static func world(_ c: some Clusterer, zoom: Int) -> [FeatureID: Feature] {
        var out: [Feature] = []
        c.features(in: BBox(west: -180, south: -85, east: 180, north: 85), zoom: Double(zoom), into: &out)
        return Dictionary(out.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    }

    @Test(
        "a filtered index has the counts, positions, parents and aggregates of an index built from just the matching points",
        arguments: [UInt64(1), 2, 3, 4, 5, 6])
    func exactClusters(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        let data = Self.dataset(&random, count: 300 + Int(random.next() % 500))
        let options = ClusterOptions(maxZoom: 8, radius: 60)
        for _ in 0..<8 {
            let filter = RandomFilter.make(&random, depth: 2)
            let subset = data.filtered(by: filter)
            let expected = Self.oracle(data, filter)
            #expect(Set(subset.ids) == Set(expected.ids), "\(filter.text)")
            let built = try ClusterIndex(dataset: subset, options: options, aggregates: Self.aggregates)
            let fresh = try ClusterIndex(dataset: expected, options: options, aggregates: Self.aggregates)
            #expect(built.pointCount == expected.count)
            let bound = BoundFilter(filter, columns: data.properties.columns)
            for zoom in 0...9 {
                let a = Self.world(built, zoom: zoom)
                let b = Self.world(fresh, zoom: zoom)
                #expect(a.keys.sorted() == b.keys.sorted(), "\(filter.text) at zoom \(zoom)")
                for (id, f) in a {
                    guard let g = b[id] else { continue }
                    #expect(f.count == g.count && f.lat == g.lat && f.lon == g.lon && f.parent == g.parent)
                    // NaN (a max over points without a value) is equal to NaN here.
                    let same = zip(built.aggregateValues(of: f), fresh.aggregateValues(of: g)).allSatisfy {
                        $0 == $1 || ($0.isNaN && $1.isNaN)
                    }
                    #expect(same)
                    if f.isPoint {
                        let row = Int(f.row)
                        let cells = subset.properties.values[row * 5..<(row + 1) * 5]
                        #expect(bound.matches(PropertyCells(cells)), "a point outside the filter: \(id)")
                    }
                }
                #expect(a.values.reduce(0) { $0 + Int($1.count) } == expected.count)
            }
        }
    }

    @Test("a changed point is itself where it passes the filter, and gone where it does not")
    func changes() throws {
        let filter = try FilterExpression(json: JSONReader.parse(Array(#"[">", ["get", "speed"], 10]"#.utf8)))
        let bound = BoundFilter(filter, columns: ["kind", "speed"])
        let fast = ChangedPoint(id: 4, now: PointRecord(position: Coordinate(lat: 1, lon: 2), values: ["bus", 20]))
        let slow = ChangedPoint(id: 4, now: PointRecord(position: Coordinate(lat: 1, lon: 2), values: ["bus", 5]))
        let short = ChangedPoint(id: 4, now: PointRecord(position: Coordinate(lat: 1, lon: 2), values: ["bus"]))
        #expect(fast.filtered(by: bound) == fast)
        #expect(slow.filtered(by: bound) == ChangedPoint(id: 4, now: nil))
        #expect(short.filtered(by: bound) == ChangedPoint(id: 4, now: nil))
        #expect(ChangedPoint(id: 4, now: nil).filtered(by: bound) == ChangedPoint(id: 4, now: nil))
    }

    @Test("a change concerns a filtered index when the point passed before it or passes after it")
    func concerns() throws {
        let filter = try FilterExpression(json: JSONReader.parse(Array(#"[">", ["get", "speed"], 10]"#.utf8)))
        let bound = BoundFilter(filter, columns: ["kind", "speed"])
        let fast = PointRecord(position: Coordinate(lat: 1, lon: 2), values: ["bus", 20])
        let slow = PointRecord(position: Coordinate(lat: 1, lon: 2), values: ["bus", 5])
        #expect(ChangedPoint(id: 4, now: fast, prior: .absent).concerns(bound), "enters")
        #expect(ChangedPoint(id: 4, now: slow, prior: .values(["bus", 30])).concerns(bound), "leaves")
        #expect(ChangedPoint(id: 4, now: nil, prior: .values(["bus", 30])).concerns(bound), "deleted from it")
        #expect(!ChangedPoint(id: 4, now: slow, prior: .values(["bus", 5])).concerns(bound), "out, and stays out")
        #expect(!ChangedPoint(id: 4, now: slow, prior: .absent).concerns(bound), "inserted outside it")
        #expect(!ChangedPoint(id: 4, now: nil, prior: .values(["bus"])).concerns(bound), "deleted, never in")
        #expect(ChangedPoint(id: 4, now: slow, prior: .unknown).concerns(bound), "unknown before: laid")
    }
}
