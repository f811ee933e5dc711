/// A value computed over the points of every cluster, supercluster's map/reduce: each point maps to
/// its number in `column`, and a cluster reduces its points' numbers with `operation`. Written
/// `NAME=OP(COLUMN)` on the command line, e.g. `people=sum(population)`.
public struct Aggregate: Equatable, Sendable {
    /// How a cluster's points' values combine.
    public enum Operation: String, CaseIterable, Sendable {
        /// The total; blank or unparsable cells count 0.
        case sum
        /// The smallest value; blank or unparsable cells are left out.
        case min
        /// The largest value; blank or unparsable cells are left out.
        case max
        /// The sum divided by the cluster's point count; blank or unparsable cells count 0.
        case mean
    }

    /// The key on the wire (`hello`'s `aggregates`, each cluster's `aggregates`).
    public var name: String
    public var operation: Operation
    /// The dataset property column the values come from.
    public var column: String

    public init(name: String, operation: Operation, column: String) {
        self.name = name
        self.operation = operation
        self.column = column
    }

    /// Reads `NAME=OP(COLUMN)`.
    /// - Throws: ``IndexError/invalidAggregate(text:reason:)`` saying what is wrong.
    public init(parsing written: String) throws(IndexError) {
        let text = written.trimmingSpaces()
        guard let equals = text.firstIndex(of: "="), let open = text.firstIndex(of: "("), equals < open,
            text.hasSuffix(")")
        else {
            throw .invalidAggregate(text: written, reason: "expected NAME=OP(COLUMN), e.g. people=sum(population)")
        }
        let name = String(text[..<equals]).trimmingSpaces()
        let opText = String(text[text.index(after: equals)..<open]).trimmingSpaces()
        let column = String(text[text.index(after: open)..<text.index(before: text.endIndex)]).trimmingSpaces()
        guard !name.isEmpty else { throw .invalidAggregate(text: written, reason: "the name is empty") }
        guard let operation = Operation(rawValue: opText.lowercased()) else {
            let names = Operation.allCases.map(\.rawValue).joined(separator: ", ")
            throw .invalidAggregate(text: written, reason: "\"\(opText)\" is not one of \(names)")
        }
        guard !column.isEmpty else { throw .invalidAggregate(text: written, reason: "the column is empty") }
        self.init(name: name, operation: operation, column: column)
    }

    /// The partial result of no points: 0 for sums, NaN ("none yet") for min and max.
    @inlinable public var identity: Double {
        switch operation {
        case .sum, .mean: 0
        case .min, .max: .nan
        }
    }

    /// Folds one more partial result into `a`; NaN (no value) is passed over by min and max.
    @inlinable public func combine(_ a: Double, _ b: Double) -> Double {
        switch operation {
        case .sum, .mean: a + b
        case .min: a.isNaN || b < a ? b : a
        case .max: a.isNaN || b > a ? b : a
        }
    }

    /// The value a client sees for a reduced result over `count` points (a mean divides its sum);
    /// NaN when no point had a value.
    @inlinable public func value(reduced: Double, count: UInt32) -> Double {
        operation == .mean ? reduced / Double(max(count, 1)) : reduced
    }

    /// Each row's mapped values, row-major with stride `aggregates.count`.
    /// - Throws: ``IndexError/unknownAggregateColumn(name:available:)`` for a column the dataset lacks.
    static func rowValues(_ aggregates: [Aggregate], of dataset: Dataset) throws(IndexError) -> [Double] {
        let k = aggregates.count
        let table = dataset.properties
        var values = [Double](repeating: 0, count: dataset.count * k)
        for (c, aggregate) in aggregates.enumerated() {
            guard let column = table.columns.firstIndex(of: aggregate.column) else {
                throw .unknownAggregateColumn(name: aggregate.column, available: table.columns)
            }
            for row in 0..<dataset.count {
                // A blank cell is 0 to a sum and no value to min and max.
                values[row * k + c] = table.value(row: row, column: column)?.numberValue ?? aggregate.identity
            }
        }
        return values
    }
}
