import PinwheelCore
import Testing

@testable import PinwheelLoad

@Suite("Load filters")
struct LoadFiltersTests {
    static let data: Dataset = {
        var generator = SyntheticGenerator(seed: 1)
        generator.tenants = 20
        return generator.dataset(count: 200_000)
    }()

    static func share(_ f: FilterExpression) -> Double {
        Double(data.rows(passing: f).count) / Double(data.count)
    }

    @Test("100 filters over 20 tenants: distinct keys, each selecting 1 % to 50 % of the points as built to")
    func spread() {
        let filters = LoadFilters(count: 100, tenants: 20).filters
        #expect(filters.count == 100)
        #expect(Set(filters.map(\.expression.key)).count == 100)
        #expect(abs(filters.first!.share - 0.01) < 1e-9 && abs(filters.last!.share - 0.5) < 1e-9)
        for f in filters {
            let measured = Self.share(f.expression)
            #expect(abs(measured - f.share) < 0.1 * f.share + 0.003, "\(f.expression.text): \(measured)")
        }
    }

    @Test("without tenants the filters are over speed alone")
    func speedOnly() {
        let filters = LoadFilters(count: 10, tenants: 0).filters
        #expect(Set(filters.map(\.expression.key)).count == 10)
        #expect(filters.allSatisfy { !$0.expression.text.contains("tenant") })
    }

    @Test("probe filters are never-seen: distinct from each other and from every load filter, about 10 % each")
    func probes() {
        let warm = Set(LoadFilters(count: 100, tenants: 20).filters.map(\.expression.key))
        let keys = (0..<200).map { LoadFilters.probe($0).expression.key }
        #expect(Set(keys).count == 200)
        #expect(warm.isDisjoint(with: keys))
        for k in [0, 1, 17] {
            #expect(abs(Self.share(LoadFilters.probe(k).expression) - 0.1) < 0.01)
        }
    }

    @Test("a point feature's properties are read by the bound filter; a point outside it fails")
    func check() {
        let f = LoadFilters(count: 100, tenants: 20).filters[0]
        var inside: [String: PropertyValue] = [:]
        for row in 0..<Self.data.count where f.expression.matches(Self.data.properties.row(row)) {
            inside = Self.data.properties.row(row)
            break
        }
        #expect(f.bound.matches(NamedProperties(inside)))
        var outside = inside
        outside["tenant"] = "t-nobody"
        #expect(!f.bound.matches(NamedProperties(outside)))
        #expect(!f.bound.matches(NamedProperties([:])))
    }
}

extension PropertyTable {
    /// Row `r`'s properties by name.
    func row(_ r: Int) -> [String: PropertyValue] {
        var p: [String: PropertyValue] = [:]
        for (c, name) in columns.enumerated() { p[name] = value(row: r, column: c) }
        return p
    }
}
