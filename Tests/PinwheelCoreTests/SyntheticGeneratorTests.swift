import Testing

@testable import PinwheelCore

@Suite("Synthetic generator")
struct SyntheticGeneratorTests {
    @Test("the same seed gives the same points, another seed other points")
    func deterministic() {
        let a = SyntheticGenerator(seed: 7).dataset(count: 5000)
        let b = SyntheticGenerator(seed: 7).dataset(count: 5000)
        let c = SyntheticGenerator(seed: 8).dataset(count: 5000)
        #expect(a.coordinates == b.coordinates && a.ids == b.ids)
        #expect(a.coordinates != c.coordinates)
        #expect(a.ids == (0..<5000).map { UInt32($0) })
    }

    @Test("5 % of the points sit in same-coordinate groups of 2 to 50")
    func groups() {
        for seed in UInt64(1)...5 {
            let count = 20_000 + Int(seed) * 1_337
            let data = SyntheticGenerator(seed: seed).dataset(count: count)
            let groups = SameCoordinateGroups(dataset: data)
            #expect(groups.rows.count == Int((Double(count) * 0.05).rounded()))
            #expect((0..<groups.count).allSatisfy { (2...50).contains(groups.size(of: $0)) })
        }
    }

    @Test("points are valid coordinates, almost all of them over the land boxes")
    func land() {
        let data = SyntheticGenerator(seed: 3).dataset(count: 50_000)
        var onLand = 0
        for row in 0..<data.count {
            let (lon, lat) = (data.lon(row), data.lat(row))
            #expect(abs(lat) <= 84 && abs(lon) <= 180)
            let margin = 2.0
            if SyntheticGenerator.landBoxes.contains(where: {
                lon >= $0.west - margin && lon <= $0.east + margin && lat >= $0.south - margin
                    && lat <= $0.north + margin
            }) {
                onLand += 1
            }
        }
        #expect(onLand >= data.count * 95 / 100)
    }

    @Test("tiny and empty datasets have no partial groups")
    func tiny() {
        #expect(SyntheticGenerator().dataset(count: 0).count == 0)
        let ten = SyntheticGenerator().dataset(count: 10)
        #expect(ten.count == 10)
        #expect(SameCoordinateGroups(dataset: ten).count == 0)
        let forty = SyntheticGenerator().dataset(count: 40)
        #expect(SameCoordinateGroups(dataset: forty).rows.count == 2)
    }
}

@Suite("Synthetic fleet columns")
struct SyntheticFleetTests {
    @Test("tenants are about equally common, speeds uniform tenths, each drawn from the id alone")
    func fleet() {
        var generator = SyntheticGenerator(seed: 9)
        generator.tenants = 20
        generator.categories = 3
        let data = generator.dataset(count: 100_000)
        #expect(data.properties.columns == ["kind", "tenant", "speed"])
        var perTenant: [String: Int] = [:]
        var slow = 0
        for row in 0..<data.count {
            guard case .string(let tenant)? = data.properties.value(row: row, column: 1),
                case .number(let speed)? = data.properties.value(row: row, column: 2)
            else {
                Issue.record("row \(row) lacks a tenant or a speed")
                return
            }
            perTenant[tenant, default: 0] += 1
            if speed < 10 { slow += 1 }
            #expect((speed * 10).rounded() == speed * 10 && speed >= 0 && speed < 100)
            let again = generator.fleetProperties(id: data.ids[row])
            #expect(again.tenant == tenant && again.speed == speed)
        }
        #expect(perTenant.count == 20)
        #expect(perTenant.values.allSatisfy { (4_500...5_500).contains($0) })
        #expect((9_500...10_500).contains(slow))
        // The positions do not change with the columns.
        #expect(data.coordinates == SyntheticGenerator(seed: 9).dataset(count: 100_000).coordinates)
    }
}
