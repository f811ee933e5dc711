/// Why an index could not be built from the given data and options.
public enum IndexError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An option outside its range; `expected` says what is accepted.
    case invalidOption(name: String, value: String, expected: String)
    /// A column to sum that the dataset does not have.
    case unknownSumColumn(name: String, available: [String])
    /// More points than the index can number.
    case tooManyPoints(count: Int, limit: Int)

    public var description: String {
        switch self {
        case .invalidOption(let name, let value, let expected):
            "option \(name) = \(value) is invalid: expected \(expected)"
        case .unknownSumColumn(let name, let available):
            "cannot sum column \"\(name)\": the dataset has columns \(available)"
        case .tooManyPoints(let count, let limit):
            "\(count) points is more than the index holds (\(limit))"
        }
    }
}
