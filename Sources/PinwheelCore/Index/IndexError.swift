/// Why an index could not be built from the given data and options.
public enum IndexError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An option outside its range; `expected` says what is accepted.
    case invalidOption(name: String, value: String, expected: String)
    /// An aggregate's column that the dataset does not have.
    case unknownAggregateColumn(name: String, available: [String])
    /// An aggregate written other than `NAME=OP(COLUMN)` with a known OP.
    case invalidAggregate(text: String, reason: String)
    /// A flag written other than `NAME=EXPR` with a rule ``FlagRule`` reads.
    case invalidFlag(text: String, reason: String)
    /// A group-by column or flag set the dataset cannot have (see ``ClusterContents``).
    case invalidContents(reason: String)
    /// More points than the index can number.
    case tooManyPoints(count: Int, limit: Int)

    public var description: String {
        switch self {
        case .invalidOption(let name, let value, let expected):
            "option \(name) = \(value) is invalid: expected \(expected)"
        case .unknownAggregateColumn(let name, let available):
            "cannot aggregate column \"\(name)\": the dataset has columns \(available)"
        case .invalidAggregate(let text, let reason):
            "aggregate \"\(text)\": \(reason)"
        case .invalidFlag(let text, let reason):
            "flag \"\(text)\": \(reason)"
        case .invalidContents(let reason):
            reason
        case .tooManyPoints(let count, let limit):
            "\(count) points is more than the index holds (\(limit))"
        }
    }
}
