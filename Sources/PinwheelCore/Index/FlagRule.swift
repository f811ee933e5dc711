/// A named boolean rule over a point's properties, whose matches every cluster counts
/// (`serve --flag alert=["==",["get","status"],"alarm"]`), so a page can ring the clusters that hide
/// one. The rule is a filter, in the same MapLibre expression subset sessions filter with
/// (``FilterExpression``), matched against the point's typed properties.
public struct FlagRule: Equatable, Sendable {
    /// The key on the wire (hello's `flags`).
    public var name: String
    /// The rule as written, for messages.
    public var text: String
    public var expression: FilterExpression

    /// Reads `NAME=EXPR`.
    /// - Throws: ``IndexError/invalidFlag(text:reason:)`` naming the position at fault, e.g. `flag[1]`.
    public init(parsing written: String) throws(IndexError) {
        guard let equals = written.firstIndex(of: "=") else {
            throw .invalidFlag(
                text: written, reason: "expected NAME=EXPR, e.g. alert=[\"==\",[\"get\",\"status\"],\"alarm\"]")
        }
        let name = String(written[..<equals]).trimmingSpaces()
        guard !name.isEmpty else { throw .invalidFlag(text: written, reason: "the name is empty") }
        let text = String(written[written.index(after: equals)...])
        let value: JSONValue
        do {
            value = try JSONReader.parse(text)
        } catch {
            throw .invalidFlag(text: written, reason: "the rule is not JSON: \(error)")
        }
        do {
            expression = try FilterExpression(json: value, path: "flag")
        } catch {
            throw .invalidFlag(text: written, reason: error.description)
        }
        self.name = name
        self.text = text
    }

    /// The property names the rule reads, so that a name no column has is refused at start rather
    /// than never matching.
    public var columns: [String] { Self.names(in: expression) }

    private static func names(in f: FilterExpression) -> [String] {
        func operand(_ o: FilterOperand) -> [String] {
            if case .get(let name) = o { return [name] }
            return []
        }
        switch f {
        case .constant: return []
        case .has(let name), .isTrue(let name): return [name]
        case .compare(_, let a, let b): return operand(a) + operand(b)
        case .oneOf(let a, _): return operand(a)
        case .match(let a, let arms, let fallback):
            return operand(a) + arms.flatMap { names(in: $0.result) } + names(in: fallback)
        case .all(let parts), .any(let parts): return parts.flatMap(names)
        case .not(let g): return names(in: g)
        }
    }
}
