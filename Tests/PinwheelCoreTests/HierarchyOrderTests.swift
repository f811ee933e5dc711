import Testing

@testable import PinwheelCore

@Suite("Hierarchy order")
struct HierarchyOrderTests {
    @Test("every item of every level holds one run of positions: its own points, groups' rows together")
    func runsAreAnItemsPoints() throws {
        let dataset = SyntheticGenerator(seed: 3).dataset(count: 4000)
        let index = try ClusterIndex(dataset: dataset)
        #expect(index.groups.count > 0, "the data has same-coordinate groups")
        let order = HierarchyOrder(index, keepingFrom: 0)
        #expect(Set(order.positionOfRow) == Set((0..<dataset.count).map(Int32.init)))
        for li in 0..<index.levels.count {
            for item in 0..<index.levels[li].count {
                let count = Int(ItemMeta.count(index.levels[li].meta[item]))
                let run = order.run(level: li, item: item, count: count)
                let leaves = index.leaves(level: li, item: item, limit: count, offset: 0)
                let positions = Set(leaves.map { Int(order.positionOfRow[Int($0.row)]) })
                #expect(positions == Set(run), "level \(li), item \(item)")
            }
        }
        let raw = index.levels.count - 1
        for row in 0..<dataset.count {
            let item = Int(order.rawItemAtPosition[Int(order.positionOfRow[row])])
            let leaves = index.leaves(level: raw, item: item, limit: .max, offset: 0)
            #expect(leaves.contains { $0.row == row }, "row \(row)")
        }
    }
}
