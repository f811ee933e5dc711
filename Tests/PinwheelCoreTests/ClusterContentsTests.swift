import Testing

@testable import PinwheelCore

/// What clusters count besides their points (breakdowns by one column, flags) against a brute-force
/// count of the points each one holds, at every zoom, built whole and under random change histories.
@Suite("Cluster contents")
struct ClusterContentsTests {
    static let world = BBox(west: -180, south: -85, east: 180, north: 85)

    /// 15 kinds: the 12 most common are listed, the rest go to "other".
    static func dataset(seed: UInt64, count: Int) -> Dataset {
        var generator = SyntheticGenerator(seed: seed)
        generator.categories = 15
        return generator.dataset(count: count)
    }

    static func contents(for dataset: Dataset) throws -> ClusterContents {
        let flags = try [
            FlagRule(parsing: #"first=["==",["get","kind"],"kind-1"]"#),
            FlagRule(parsing: #"rare=["in",["get","kind"],["literal",["kind-13","kind-14","new-3"]]]"#),
            FlagRule(parsing: #"unnamed=["==",["get","kind"],null]"#),
        ]
        return try ClusterContents.choosing(groupBy: "kind", flags: flags, from: dataset)
    }

    /// Every cluster in view at every zoom: its counts sum to its count and equal the codes of the
    /// points its leaves list, and the leaves are as many as its count.
    static func checkEveryZoom(_ clusterer: any Clusterer, zooms: ClosedRange<Int> = 0...18) {
        let contents = clusterer.contents
        let context = FeatureContext(clusterer: clusterer)
        var features: [Feature] = []
        var checked = 0
        for zoom in zooms {
            clusterer.features(in: world, zoom: Double(zoom), into: &features)
            for f in features where !f.isPoint {
                var counts = [Int32](repeating: 0, count: contents.slots)
                clusterer.addContents(of: f, to: &counts)
                #expect(counts.prefix(contents.groupSlots).reduce(0, +) == Int32(f.count), "cluster \(f.id) at \(zoom)")
                let leaves = clusterer.members(of: f.id, zoom: Double(zoom)) ?? []
                #expect(leaves.count == Int(f.count), "leaves of \(f.id) at \(zoom)")
                var expected = [Int32](repeating: 0, count: contents.slots)
                for leaf in leaves {
                    let (columns, values) = context.properties(of: leaf) ?? ([], [])
                    let code = contents.coder(columns: columns).code(values)
                    ContentTally.add(code, by: 1, to: &expected, contents: contents)
                }
                #expect(counts == expected, "cluster \(f.id) of \(f.count) at zoom \(zoom)")
                checked += 1
            }
        }
        #expect(checked > 100)
    }

    @Test("the listed values are the most common, and the rest, blanks and later values are other")
    func choosingValues() throws {
        let data = Self.dataset(seed: 3, count: 20_000)
        let contents = try Self.contents(for: data)
        #expect(contents.values == (0..<12).map { "kind-\($0)" })
        #expect(contents.groupSlots == 13 && contents.slots == 16)
        let coder = contents.coder(columns: ["kind"])
        #expect(coder.code(["kind-0"]) == 0)
        #expect(coder.code(["kind-1"]) == 1 | 1 << 8)
        #expect(coder.code(["kind-13"]) == 12 | 1 << 9)
        #expect(coder.code(["new-3"]) == 12 | 1 << 9)
        #expect(coder.code([nil]) == 12 | 1 << 10)
        #expect(coder.code([]) == 12 | 1 << 10)
    }

    @Test("a whole table's codes, in one part or two, equal each row's, with texts, numbers, booleans and blanks")
    func tableCodes() throws {
        let rows = 70_000
        var random = SplitMix64(seed: 9)
        // 20 texts (more than the short list counted apart while choosing), a number whose label is a
        // listed text's, a boolean and blanks.
        let pool: [PropertyValue?] =
            (0..<20).map { .string("t\($0)") } + [.number(1), .string("1"), .bool(true), nil]
        var values: [PropertyValue?] = []
        for _ in 0..<rows {
            // Skewed, so the choice of the 12 listed values is clear-cut.
            let k = Int(random.next() % UInt64(pool.count))
            values += [.number(Double(k)), pool[Int(random.next() % UInt64(k + 1))]]
        }
        let table = PropertyTable(columns: ["n", "kind"], values: values)
        let data = Dataset(
            ids: (0..<UInt32(rows)).map { $0 }, coordinates: [Double](repeating: 0, count: 2 * rows), properties: table)
        let flags = [try FlagRule(parsing: #"big=[">",["get","n"],10]"#)]
        let contents = try ClusterContents.choosing(groupBy: "kind", flags: flags, from: data)
        // The choice matches a plain count of every row's label.
        var counts: [String: Int] = [:]
        for row in 0..<rows {
            if let v = values[2 * row + 1] { counts[ClusterContents.label(v), default: 0] += 1 }
        }
        let expected = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.prefix(12)
        #expect(contents.values == expected.map(\.key))
        let coder = contents.coder(columns: table.columns)
        let each = (0..<rows).map { coder.code(values[2 * $0..<2 * $0 + 2]) }
        #expect(coder.codes(of: table, rows: rows, concurrently: true) == each)
        #expect(coder.codes(of: table, rows: rows, concurrently: false) == each)
        #expect(Set(each.map { $0 & 0xFF }).count == 13, "every listed value and other")
    }

    @Test("a group-by column or flag column the dataset lacks is refused by name")
    func unknownColumns() throws {
        let data = Self.dataset(seed: 3, count: 100)
        #expect(
            throws: IndexError.invalidContents(
                reason: #"cannot group by column "type": the dataset has columns ["kind"]"#)
        ) {
            try ClusterContents.choosing(groupBy: "type", flags: [], from: data)
        }
        let rule = try FlagRule(parsing: #"a=["==",["get","status"],"x"]"#)
        #expect(throws: IndexError.self) { try ClusterContents.choosing(groupBy: nil, flags: [rule], from: data) }
    }

    @Test("a flag rule outside the filter subset is refused at the position at fault")
    func badRules() {
        let operators = "all, any, !, has, get, ==, !=, <, <=, >, >=, in, match"
        #expect(
            throws: IndexError.invalidFlag(
                text: #"a=["~",["get","k"],1]"#,
                reason: #"flag[0]: unknown operator "~"; a filter may use "# + operators)
        ) {
            try FlagRule(parsing: #"a=["~",["get","k"],1]"#)
        }
        #expect(
            throws: IndexError.invalidFlag(
                text: #"a=["==",["get","k"],[1]]"#,
                reason: #"flag[2]: expected ["get", name] or a string, number, boolean or null, got another array"#)
        ) {
            try FlagRule(parsing: #"a=["==",["get","k"],[1]]"#)
        }
        #expect(throws: IndexError.self) { try FlagRule(parsing: #"["==",["get","k"],1]"#) }
        #expect(throws: IndexError.self) { try FlagRule(parsing: "a=not json") }
    }

    @Test("flag rules match typed properties as MapLibre's ==, !=, in, all, any and ! do")
    func ruleSemantics() throws {
        let rule = try FlagRule(
            parsing:
                #"x=["all",["!=",["get","s"],"ok"],["any",["==",["get","n"],3],["in",["get","b"],["literal",[true]]]],["!",["==",["get","s"],null]]]"#
        )
        let columns = ["s", "n", "b"]
        let coder = ClusterContents(column: nil, values: [], flags: [rule]).coder(columns: columns)
        func flagged(_ cells: [PropertyValue?]) -> Bool { coder.code(cells[...]) & (1 << 8) != 0 }
        #expect(flagged(["alarm", 3.0, false]))
        #expect(!flagged(["ok", 3, nil]))
        #expect(!flagged([nil, 3, nil]))
        #expect(!flagged(["alarm", "3", false]), "a string is not the number 3")
        #expect(flagged(["x", 4, true]))
        #expect(rule.columns.sorted() == ["b", "n", "s", "s"])
    }

    @Test(
        "every cluster's breakdown and flags equal a brute-force count of its points at every zoom",
        arguments: [UInt64(1), 2])
    func builtWhole(seed: UInt64) throws {
        let data = Self.dataset(seed: seed, count: 6000)
        let contents = try Self.contents(for: data)
        Self.checkEveryZoom(try ClusterIndex(dataset: data, contents: contents))
    }

    @Test("every PCA-tree node's breakdown and flags equal a brute-force count of its points")
    func pcaTree() throws {
        let data = Self.dataset(seed: 5, count: 6000)
        let tree = try PCATree(dataset: data, contents: try Self.contents(for: data))
        Self.checkEveryZoom(tree, zooms: 0...10)
    }

    /// A random history of moves, new points, deletions and property changes (to listed values, to
    /// values only seen after load, and to none) over a base of `base` points.
    static func history(seed: UInt64, base start: Dataset, changes: Int) -> (table: PointTable, changed: [ChangedPoint])
    {
        var random = SeededRandom(seed: seed)
        var table = PointTable(start)
        var changed: [ChangedPoint] = []
        var made = 0
        for version in 1...UInt64(changes) {
            let live = table.dataset.ids
            let roll = Int.random(in: 0..<100, using: &random)
            let kind = ["kind-0", "kind-1", "kind-7", "kind-13", "new-3", "new-4", ""].randomElement(using: &random)!
            let properties: [String: PropertyValue] = kind.isEmpty ? [:] : ["kind": .string(kind)]
            let change: Change
            if roll < 10 || live.isEmpty {
                made += 1
                let lat = Double.random(in: -60...70, using: &random)
                let lon = Double.random(in: -170...170, using: &random)
                change = .upsert(.number(UInt32(start.count + 1000 + made)), lat: lat, lon: lon, properties: properties)
            } else if roll < 20 {
                change = .delete(.number(live.randomElement(using: &random)!))
            } else {
                let id = live.randomElement(using: &random)!
                let record = table.record(ofID: id)!
                let (lat, lon) = (record.position.lat, record.position.lon)
                // Half of them keep their kind and only move; the others change it too.
                let keep = Bool.random(using: &random)
                let now = record.values.first ?? nil
                change = .upsert(
                    .number(id), lat: min(85, max(-85, lat + Double.random(in: -0.5...0.5, using: &random))),
                    lon: min(180, max(-180, lon + Double.random(in: -0.5...0.5, using: &random))),
                    properties: keep ? (now.map { ["kind": $0] } ?? [:]) : properties)
            }
            let deleted = table.id(of: change.key)
            table.apply(change, version: version)
            if case .delete = change {
                changed.append(ChangedPoint(id: deleted!, now: nil))
            } else {
                let id = table.id(of: change.key)!
                changed.append(ChangedPoint(id: id, now: table.record(ofID: id)))
            }
        }
        return (table, changed)
    }

    @Test(
        "breakdowns and flags stay exact under random change histories, at every zoom",
        arguments: [UInt64(11), 12, 13], [ClusterDelta.largestDenseLevel, 0])
    func underChanges(seed: UInt64, largestDenseLevel: Int) throws {
        let start = Self.dataset(seed: seed, count: 3000)
        let contents = try Self.contents(for: start)
        let base = try ClusterIndex(dataset: start, contents: contents)
        var delta = ClusterDelta(base: base, largestDenseLevel: largestDenseLevel)
        let (table, changed) = Self.history(seed: seed, base: start, changes: 1500)
        // Checked part way too: a history is exact at every step, not only at its end.
        for (k, change) in changed.enumerated() {
            delta.apply(change)
            if k == 400 {
                Self.checkEveryZoom(
                    LiveClusterIndex(
                        delta: delta, version: 0, names: [:], columns: table.dataset.properties.columns, pointCount: 0),
                    zooms: 0...8)
            }
        }
        let live = LiveClusterIndex(
            delta: delta, version: table.dataset.version, names: table.dataset.names,
            columns: table.dataset.properties.columns, pointCount: table.count)
        Self.checkEveryZoom(live)
        // A compaction's build of the same points counts the same totals.
        let fresh = try ClusterIndex(dataset: table.dataset, contents: contents)
        var total = [Int32](repeating: 0, count: contents.slots)
        var freshTotal = total
        var features: [Feature] = []
        live.features(in: Self.world, zoom: 0, into: &features)
        let context = FeatureContext(clusterer: live)
        for f in features {
            if f.isPoint {
                let (columns, values) = context.properties(of: f) ?? ([], [])
                ContentTally.add(contents.coder(columns: columns).code(values), by: 1, to: &total, contents: contents)
            } else {
                live.addContents(of: f, to: &total)
            }
        }
        fresh.features(in: Self.world, zoom: 0, into: &features)
        for f in features {
            if f.isPoint {
                let values = FeatureContext(clusterer: fresh).properties(of: f)?.values ?? []
                ContentTally.add(
                    contents.coder(columns: table.dataset.properties.columns).code(values), by: 1, to: &freshTotal,
                    contents: contents)
            } else {
                fresh.addContents(of: f, to: &freshTotal)
            }
        }
        #expect(total == freshTotal)
    }
}
