/// An index's rows in the order of its hierarchy: depth first from the coarsest level, each item's
/// children in their stored order, a same-coordinate group's rows together. Every item of every level
/// then holds one run of consecutive positions, as long as its count, so what changes took out of a
/// cluster can be read from the positions of the rows they removed rather than kept per cluster.
struct HierarchyOrder: Sendable {
    /// Each dataset row's position; -1 for a row the index does not hold.
    let positionOfRow: [Int32]
    /// The raw item holding the row at each position.
    let rawItemAtPosition: [Int32]
    /// The id of the point at each position: a cluster's member page reads its run of them in order,
    /// where reading rows and then their ids would jump about the dataset.
    let idAtPosition: [UInt32]
    /// The first position of each item of the levels from `firstKept` on; empty for the others.
    private let firstPositions: [[Int32]]

    /// Bytes of its arrays.
    var storedBytes: Int {
        (positionOfRow.count + rawItemAtPosition.count + idAtPosition.count + firstPositions.reduce(0) { $0 + $1.count })
            * 4
    }

    /// Orders the rows of `index`.
    /// - Parameter firstKept: the coarsest level whose items' runs ``run(level:item:count:)`` answers.
    init(_ index: ClusterIndex, keepingFrom firstKept: Int) {
        self.init(levels: index.levels, groups: index.groups, ids: index.dataset.ids, keepingFrom: firstKept)
    }

    /// Orders the rows of an index's levels, before the index exists.
    /// - Parameter ids: the dataset's ids, one per row.
    init(levels: [ZoomLevel], groups: SameCoordinateGroups, ids: [UInt32], keepingFrom firstKept: Int) {
        let rowCount = ids.count
        var kept = [[Int32]](repeating: [], count: levels.count)
        var total: Int32 = 0
        var starts = levels[0].meta.map { meta in
            defer { total += Int32(ItemMeta.count(meta)) }
            return total
        }
        for li in 0..<levels.count - 1 {
            if li >= firstKept { kept[li] = starts }
            starts = Self.childStarts(of: levels[li], in: levels[li + 1], starts: starts)
        }
        if levels.count - 1 >= firstKept { kept[levels.count - 1] = starts }
        var positionOfRow = [Int32](repeating: -1, count: rowCount)
        var rawItemAtPosition = [Int32](repeating: -1, count: Int(total))
        var idAtPosition = [UInt32](repeating: 0, count: Int(total))
        let raw = levels[levels.count - 1]
        for item in 0..<raw.count {
            let meta = raw.meta[item]
            let payload = Int(ItemMeta.payload(meta))
            var position = Int(starts[item])
            if ItemMeta.tag(meta) == 0 {
                positionOfRow[payload] = Int32(position)
                rawItemAtPosition[position] = Int32(item)
                idAtPosition[position] = ids[payload]
                continue
            }
            for row in groups.rows(of: payload) {
                positionOfRow[Int(row)] = Int32(position)
                rawItemAtPosition[position] = Int32(item)
                idAtPosition[position] = ids[Int(row)]
                position += 1
            }
        }
        self.positionOfRow = positionOfRow
        self.rawItemAtPosition = rawItemAtPosition
        self.idAtPosition = idAtPosition
        firstPositions = kept
    }

    /// The first positions of the items of `finer`, given those of `level`'s: each item's children
    /// follow one another from where it starts.
    private static func childStarts(of level: ZoomLevel, in finer: ZoomLevel, starts: [Int32]) -> [Int32] {
        var next = [Int32](repeating: 0, count: finer.count)
        level.firstChild.withUnsafeBufferPointer { first in
            level.childOrder.withUnsafeBufferPointer { children in
                finer.meta.withUnsafeBufferPointer { meta in
                    for item in 0..<level.count {
                        var position = starts[item]
                        for c in children[Int(first[item])..<Int(first[item + 1])] {
                            next[Int(c)] = position
                            position += Int32(ItemMeta.count(meta[Int(c)]))
                        }
                    }
                }
            }
        }
        return next
    }

    /// Whether ``run(level:item:count:)`` answers for level li.
    func keeps(level li: Int) -> Bool { !firstPositions[li].isEmpty }

    /// The positions of the rows item `item` of level li holds; li must be at least the `firstKept`
    /// the order was made with.
    func run(level li: Int, item: Int, count: Int) -> Range<Int> {
        let first = Int(firstPositions[li][item])
        return first..<first + count
    }
}
