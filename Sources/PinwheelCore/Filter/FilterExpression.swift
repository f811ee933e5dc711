/// A filter over point properties, in a subset of the MapLibre style-spec expression syntax, so
/// users of MapLibre and Mapbox read and write it as they already do:
///
/// | form | holds when |
/// |---|---|
/// | `true`, `false` | always, never |
/// | `["has", name]` | the point has the property |
/// | `["get", name]` (as a whole filter) | the property is the boolean `true` |
/// | `["==", a, b]`, `["!=", a, b]` | the values are (not) equal: same type and value; a missing property is `null` |
/// | `["<", a, b]`, `["<=", …]`, `[">", …]`, `[">=", …]` | both numbers or both strings (by code point), ordered so |
/// | `["all", f…]`, `["any", f…]`, `["!", f]` | every one, any one, not |
/// | `["in", a, ["literal", [v…]]]` | the value is one of the listed strings, numbers or booleans |
/// | `["match", a, label, f, label, f, …, fallback]` | the filter after the first label (a value, or an array of values) equal to the value, else the fallback |
///
/// `a` and `b` are `["get", name]` or literals (strings, numbers, booleans, `null`); a comparison
/// reads at least one property. Where MapLibre would stop the whole filter with an evaluation error
/// (ordering a missing property, or a string against a number), that comparison alone is false.
public indirect enum FilterExpression: Equatable, Sendable {
    /// `true` or `false`.
    case constant(Bool)
    /// `["has", name]`.
    case has(String)
    /// `["get", name]` used as a filter: the property is the boolean `true`.
    case isTrue(String)
    /// `[op, a, b]`.
    case compare(FilterComparison, FilterOperand, FilterOperand)
    /// `["in", a, ["literal", values]]`; the values are distinct and in ``FilterExpression/canonical`` order.
    case oneOf(FilterOperand, [PropertyValue])
    /// `["match", a, labels, result, …, fallback]`, for results that are not all constants (those
    /// become ``oneOf(_:_:)``).
    case match(FilterOperand, [FilterMatchArm], fallback: FilterExpression)
    /// `["all", …]`.
    case all([FilterExpression])
    /// `["any", …]`.
    case any([FilterExpression])
    /// `["!", f]`.
    case not(FilterExpression)

    /// The filter that holds where both hold; nil stands for no filter (every point).
    public static func and(_ a: FilterExpression?, _ b: FilterExpression?) -> FilterExpression? {
        guard let a else { return b }
        guard let b else { return a }
        return FilterExpression.all([a, b]).canonical
    }
}

/// The comparisons of ``FilterExpression/compare(_:_:_:)``.
public enum FilterComparison: String, CaseIterable, Sendable {
    case equal = "=="
    case notEqual = "!="
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="

    /// The comparison with its operands swapped: `a < b` is `b > a`.
    var swapped: FilterComparison {
        switch self {
        case .equal, .notEqual: self
        case .less: .greater
        case .lessOrEqual: .greaterOrEqual
        case .greater: .less
        case .greaterOrEqual: .lessOrEqual
        }
    }
}

/// What a comparison compares: a property, or a constant (`nil` is `null`, what a missing property reads as).
public enum FilterOperand: Equatable, Sendable {
    case get(String)
    case literal(PropertyValue?)
}

/// One `label, result` pair of a `match`.
public struct FilterMatchArm: Equatable, Sendable {
    /// The values that select this arm.
    public var labels: [PropertyValue]
    public var result: FilterExpression

    public init(labels: [PropertyValue], result: FilterExpression) {
        self.labels = labels
        self.result = result
    }
}
