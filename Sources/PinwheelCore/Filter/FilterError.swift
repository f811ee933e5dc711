/// Why a filter expression was refused: the position of the offending element, written as a path from
/// the filter's root (`filter[1][2]`), and what was expected there.
public struct FilterError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Where, e.g. `filter[1][2]`.
    public var path: String
    /// What is wrong, e.g. `expected a number, got a string`.
    public var reason: String

    public init(path: String, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}
