@testable import PinwheelCore

/// Aggregates checked by brute force: a dataset with a numeric column (some cells blank) and the
/// expected sum, min, max and mean over any set of rows.
enum AggregateOracle {
    static let aggregates = [
        Aggregate(name: "people", operation: .sum, column: "pop"),
        Aggregate(name: "smallest", operation: .min, column: "pop"),
        Aggregate(name: "largest", operation: .max, column: "pop"),
        Aggregate(name: "average", operation: .mean, column: "pop"),
    ]

    /// `base`'s points with columns `name` and `pop`: whole numbers, negative ones, and every 17th blank.
    static func dataset(_ base: Dataset, seed: UInt64) -> Dataset {
        var rng = SplitMix64(seed: seed)
        let values = (0..<base.count).map { row -> PropertyValue? in
            row % 17 == 3 ? nil : .number(Double(Int(rng.next() % 2001) - 1000))
        }
        return Dataset(
            ids: base.ids, coordinates: base.coordinates,
            properties: PropertyTable(columns: ["name", "pop"], values: values.flatMap { ["x", $0] }))
    }

    /// Whether a clusterer's reduced values for a feature over `count` points match brute force over `rows`.
    static func matches(_ reduced: ArraySlice<Double>, count: UInt32, rows: [Int], _ data: Dataset) -> Bool {
        guard reduced.count == aggregates.count, rows.count == Int(count) else { return false }
        let present = rows.compactMap { data.properties.value(row: $0, column: 1)?.numberValue }
        let sum = present.reduce(0, +)
        let expected: [Double] = [sum, present.min() ?? .nan, present.max() ?? .nan, sum / Double(count)]
        let got = zip(aggregates, reduced).map { $0.value(reduced: $1, count: count) }
        return zip(got, expected).allSatisfy { $0 == $1 || ($0.isNaN && $1.isNaN) }
    }
}
