/// The filter a viewer's clusters are computed over: the scope its credentials allow (which it cannot
/// widen) AND the filter it asked for. Sessions whose effective filters have the same ``key`` share
/// one index.
public struct EffectiveFilter: Equatable, Sendable {
    /// What the viewer may see at most; nil for everything.
    public var scope: FilterExpression?
    /// What the viewer asked to see; nil for everything.
    public var requested: FilterExpression?
    /// Both together, canonical; nil when neither restricts anything.
    public let expression: FilterExpression?
    /// The canonical text of ``expression``; empty for no filter.
    public let key: String

    public init(scope: FilterExpression? = nil, requested: FilterExpression? = nil) {
        self.scope = scope
        self.requested = requested
        var combined = FilterExpression.and(scope, requested)?.canonical
        if combined == .constant(true) { combined = nil }
        expression = combined
        key = combined?.text ?? ""
    }

    /// Every point, no filter at all.
    public static let everything = EffectiveFilter()

    /// Whether it lets every point through.
    public var isEverything: Bool { expression == nil }

    public static func == (a: EffectiveFilter, b: EffectiveFilter) -> Bool { a.key == b.key }
}
