import Testing

@testable import PinwheelCore

@Suite("Same-coordinate groups")
struct SameCoordinateGroupsTests {
    /// Random points where some rows copy an earlier row's coordinate; ids shuffled.
    static func dataset(seed: UInt64, count: Int) -> Dataset {
        var rng = SplitMix64(seed: seed)
        var coordinates: [Double] = []
        for i in 0..<count {
            if i > 0 && rng.nextUnit() < 0.3 {
                let j = Int(rng.next() % UInt64(i))
                coordinates += [coordinates[2 * j], coordinates[2 * j + 1]]
            } else {
                coordinates += [rng.nextUnit() * 360 - 180, rng.nextUnit() * 170 - 85]
            }
        }
        var ids = (0..<count).map { UInt32($0 * 7 + 3) }
        ids.shuffle(using: &rng)
        return Dataset(ids: ids, coordinates: coordinates)
    }

    @Test("exact groups are exactly what a dictionary of coordinates finds")
    func exactMatchesOracle() {
        for seed in UInt64(1)...20 {
            let data = Self.dataset(seed: seed, count: 2000)
            let groups = SameCoordinateGroups(dataset: data)
            var oracle: [[Double]: [Int32]] = [:]
            for row in 0..<data.count { oracle[[data.lon(row), data.lat(row)], default: []].append(Int32(row)) }
            let expected = Set(oracle.values.filter { $0.count > 1 }.map { Set($0) })
            let found = Set((0..<groups.count).map { Set(groups.rows(of: $0)) })
            #expect(found == expected)
            #expect(groups.rows.count == expected.reduce(0) { $0 + $1.count })
        }
    }

    @Test("members are in id order, groups ordered by first id, centred on the shared point")
    func order() {
        let data = Self.dataset(seed: 99, count: 3000)
        let groups = SameCoordinateGroups(dataset: data)
        #expect(groups.count > 10)
        var previousFirst: UInt32?
        for g in 0..<groups.count {
            let ids = groups.rows(of: g).map { data.ids[Int($0)] }
            #expect(ids == ids.sorted())
            if let previousFirst { #expect(previousFirst < ids[0]) }
            previousFirst = ids[0]
            let first = Int(groups.rows(of: g).first!)
            #expect(groups.centers[g] == Coordinate(lat: data.lat(first), lon: data.lon(first)))
            #expect(groups.size(of: g) == ids.count)
        }
        let byRow = groups.groupIndexByRow(rowCount: data.count)
        #expect(byRow.filter { $0 >= 0 }.count == groups.rows.count)
    }

    @Test("5,000 points on one coordinate form one group; -0 and +0 are the same coordinate")
    func oneCoordinate() {
        var coordinates: [Double] = []
        for i in 0..<5000 { coordinates += i % 2 == 0 ? [0.0, 0.0] : [-0.0, -0.0] }
        coordinates += [1, 1]
        let data = Dataset(ids: (0..<5001).map { UInt32(5001 - $0) }, coordinates: coordinates)
        let groups = SameCoordinateGroups(dataset: data)
        #expect(groups.count == 1)
        #expect(groups.size(of: 0) == 5000)
        #expect(data.ids[Int(groups.rows(of: 0).first!)] == 2)
    }

    @Test("no points and no shared coordinates give no groups")
    func none() {
        #expect(SameCoordinateGroups(dataset: Dataset(ids: [], coordinates: [])).count == 0)
        let data = Dataset(ids: [1, 2], coordinates: [1, 2, 1, 2.000001])
        #expect(SameCoordinateGroups(dataset: data).count == 0)
    }

    @Test("a tolerance groups points within that many metres of the seed, across the antimeridian too")
    func tolerance() {
        // 1e-5 degrees of latitude is about 1.11 m.
        let data = Dataset(
            ids: [10, 11, 12, 13, 14, 15, 16],
            coordinates: [
                5, 45, 5, 45.00002, 5, 45.0002,  // 0 and 1 are 2.2 m apart, 2 is 22 m away
                179.99999, 0, -179.99999, 0,  // 2.2 m apart across the antimeridian
                30, 80, 30.0001, 80,  // 1.9 m apart at 80°N
            ])
        let groups = SameCoordinateGroups(dataset: data, toleranceMetres: 5)
        let found = (0..<groups.count).map { Array(groups.rows(of: $0)) }
        #expect(found == [[0, 1], [3, 4], [5, 6]])
        #expect(SameCoordinateGroups(dataset: data, toleranceMetres: 1).count == 0)
        #expect(SameCoordinateGroups(dataset: data, toleranceMetres: 30).rows(of: 0) == [0, 1, 2])
    }
}
