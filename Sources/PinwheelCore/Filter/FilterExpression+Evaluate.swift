/// A point's properties as a filter reads them: by column, nil where the point has none.
public protocol FilterRow {
    func value(column: Int) -> PropertyValue?
}

/// Properties by name, as a dictionary holds them.
private struct NamedRow: FilterRow {
    var values: [PropertyValue?]
    func value(column: Int) -> PropertyValue? { column < 0 ? nil : values[column] }
}

/// A filter with its property names resolved to columns once, to be evaluated against many points.
public struct BoundFilter: Sendable {
    /// The expression with names as columns; a name no column has is column -1, always missing.
    indirect enum Node: Sendable {
        case constant(Bool)
        case has(Int)
        case isTrue(Int)
        case compare(FilterComparison, Operand, Operand)
        case oneOf(Operand, [PropertyValue])
        case match(Operand, [([PropertyValue], Node)], Node)
        case all([Node])
        case any([Node])
        case not(Node)
    }

    enum Operand: Sendable {
        case column(Int)
        case literal(PropertyValue?)
    }

    let root: Node

    /// Resolves `filter`'s names against `columns`.
    public init(_ filter: FilterExpression, columns: [String]) {
        var index: [String: Int] = [:]
        for (k, c) in columns.enumerated() where index[c] == nil { index[c] = k }
        root = Self.bind(filter, index)
    }

    private static func bind(_ f: FilterExpression, _ index: [String: Int]) -> Node {
        func operand(_ o: FilterOperand) -> Operand {
            switch o {
            case .get(let name): .column(index[name] ?? -1)
            case .literal(let v): .literal(v)
            }
        }
        switch f {
        case .constant(let b): return .constant(b)
        case .has(let name): return .has(index[name] ?? -1)
        case .isTrue(let name): return .isTrue(index[name] ?? -1)
        case .compare(let op, let a, let b): return .compare(op, operand(a), operand(b))
        case .oneOf(let a, let values): return .oneOf(operand(a), values)
        case .match(let a, let arms, let fallback):
            return .match(operand(a), arms.map { ($0.labels, bind($0.result, index)) }, bind(fallback, index))
        case .all(let parts): return .all(parts.map { bind($0, index) })
        case .any(let parts): return .any(parts.map { bind($0, index) })
        case .not(let g): return .not(bind(g, index))
        }
    }

    /// Whether the point whose properties `row` reads passes the filter.
    /// - Complexity: O(size of the expression), with `in` and `match` lists scanned.
    public func matches<Row: FilterRow>(_ row: Row) -> Bool { Self.holds(root, row) }

    static func holds<Row: FilterRow>(_ node: Node, _ row: Row) -> Bool {
        switch node {
        case .constant(let b): return b
        case .has(let c): return c >= 0 && row.value(column: c) != nil
        case .isTrue(let c): return c >= 0 && row.value(column: c) == .bool(true)
        case .compare(let op, let a, let b):
            let x = read(a, row)
            let y = read(b, row)
            switch op {
            case .equal, .notEqual:
                let same: Bool
                switch (x, y) {
                case (nil, nil): same = true
                case (let x?, let y?): same = x.strictlyEquals(y)
                default: same = false
                }
                return same == (op == .equal)
            case .less, .lessOrEqual, .greater, .greaterOrEqual:
                guard let x, let y, let order = x.order(y) else { return false }
                switch op {
                case .less: return order < 0
                case .lessOrEqual: return order <= 0
                case .greater: return order > 0
                default: return order >= 0
                }
            }
        case .oneOf(let a, let values):
            guard let x = read(a, row) else { return false }
            return values.contains { $0.strictlyEquals(x) }
        case .match(let a, let arms, let fallback):
            if let x = read(a, row) {
                for (labels, result) in arms where labels.contains(where: { $0.strictlyEquals(x) }) {
                    return holds(result, row)
                }
            }
            return holds(fallback, row)
        case .all(let parts):
            for p in parts where !holds(p, row) { return false }
            return true
        case .any(let parts):
            for p in parts where holds(p, row) { return true }
            return false
        case .not(let g): return !holds(g, row)
        }
    }

    private static func read<Row: FilterRow>(_ o: Operand, _ row: Row) -> PropertyValue? {
        switch o {
        case .column(let c): c >= 0 ? row.value(column: c) : nil
        case .literal(let v): v
        }
    }
}

extension FilterExpression {
    /// Whether a point with these properties passes the filter (for one point; bind the filter with
    /// ``BoundFilter`` to test many).
    public func matches(_ properties: [String: PropertyValue]) -> Bool {
        let names = Array(properties.keys)
        return BoundFilter(self, columns: names).matches(NamedRow(values: names.map { properties[$0] }))
    }
}
