extension FilterExpression {
    /// Deepest nesting of arrays a filter may have; deeper ones are refused rather than recursed into.
    public static let maxDepth = 32
    /// Most values an `in` list or a `match` may name.
    public static let maxValues = 10_000

    /// Reads a filter from its JSON form.
    /// - Parameters:
    ///   - value: the expression, e.g. `["all", ["==", ["get", "kind"], "bus"], [">", ["get", "speed"], 10]]`.
    ///   - path: how errors name the root, e.g. `filter`.
    /// - Returns: the filter as written (see ``canonical`` for the form equal filters share).
    /// - Throws: ``FilterError`` naming the position of the first element that is not part of the
    ///   subset, e.g. `filter[2][2]: expected a string, number or boolean, got an object`.
    public init(json value: JSONValue, path: String = "filter") throws(FilterError) {
        self = try FilterParser(depth: 0).filter(value, path)
    }
}

/// Reads the subset of expressions ``FilterExpression`` documents; `depth` counts arrays entered.
struct FilterParser {
    var depth: Int

    static let operators = ["all", "any", "!", "has", "get", "==", "!=", "<", "<=", ">", ">=", "in", "match"]

    func filter(_ value: JSONValue, _ path: String) throws(FilterError) -> FilterExpression {
        switch value {
        case .bool(let b):
            return .constant(b)
        case .array(let items):
            guard depth < FilterExpression.maxDepth else {
                throw FilterError(path: path, reason: "nested deeper than \(FilterExpression.maxDepth) arrays")
            }
            let inner = FilterParser(depth: depth + 1)
            return try inner.expression(items, path)
        default:
            throw FilterError(
                path: path,
                reason: "expected a filter (an expression array such as [\"==\", [\"get\", name], value], "
                    + "or true or false), got \(value.kindName)")
        }
    }

    private func expression(_ items: [JSONValue], _ path: String) throws(FilterError) -> FilterExpression {
        guard let first = items.first else {
            throw FilterError(path: path, reason: "expected an expression, got an empty array")
        }
        guard case .string(let op) = first else {
            throw FilterError(path: "\(path)[0]", reason: "expected an operator name, got \(first.kindName)")
        }
        switch op {
        case "all", "any":
            var parts: [FilterExpression] = []
            for k in 1..<items.count { parts.append(try filter(items[k], "\(path)[\(k)]")) }
            return op == "all" ? .all(parts) : .any(parts)
        case "!":
            try arity(items, 2, path, "[\"!\", filter]")
            return .not(try filter(items[1], "\(path)[1]"))
        case "has":
            try arity(items, 2, path, "[\"has\", name]")
            return .has(try name(items[1], "\(path)[1]"))
        case "get":
            try arity(items, 2, path, "[\"get\", name]")
            return .isTrue(try name(items[1], "\(path)[1]"))
        case "in":
            return try membership(items, path)
        case "match":
            return try match(items, path)
        default:
            guard let comparison = FilterComparison(rawValue: op) else {
                throw FilterError(
                    path: "\(path)[0]",
                    reason: "unknown operator \"\(op)\"; a filter may use \(Self.operators.joined(separator: ", "))")
            }
            if items.count == 4 {
                throw FilterError(path: "\(path)[3]", reason: "collators are not supported")
            }
            try arity(items, 3, path, "[\"\(op)\", a, b]")
            let a = try operand(items[1], "\(path)[1]")
            let b = try operand(items[2], "\(path)[2]")
            if case .literal = a, case .literal = b {
                throw FilterError(
                    path: path, reason: "compares two constants; read a property with [\"get\", name]")
            }
            if comparison != .equal && comparison != .notEqual {
                for (k, side) in [a, b].enumerated() {
                    guard case .literal(let v) = side else { continue }
                    switch v {
                    case .number?, .string?: break
                    default:
                        throw FilterError(
                            path: "\(path)[\(k + 1)]",
                            reason: "expected a number or a string to order by, got \(v?.kindName ?? "null")")
                    }
                }
            }
            return .compare(comparison, a, b)
        }
    }

    /// `["in", a, ["literal", [v…]]]`.
    private func membership(_ items: [JSONValue], _ path: String) throws(FilterError) -> FilterExpression {
        try arity(items, 3, path, "[\"in\", [\"get\", name], [\"literal\", [values…]]]")
        let needle = try operand(items[1], "\(path)[1]")
        guard case .array(let list) = items[2], list.count == 2, case .string("literal") = list[0],
            case .array(let values) = list[1]
        else {
            throw FilterError(
                path: "\(path)[2]",
                reason: "expected [\"literal\", [values…]], the values to look for (substring tests are not supported)")
        }
        if case .literal = needle {
            throw FilterError(path: "\(path)[1]", reason: "expected [\"get\", name], the property to look for")
        }
        guard values.count <= FilterExpression.maxValues else {
            throw FilterError(path: "\(path)[2][1]", reason: "more than \(FilterExpression.maxValues) values")
        }
        var out: [PropertyValue] = []
        for (k, v) in values.enumerated() {
            out.append(try scalar(v, "\(path)[2][1][\(k)]", booleans: true))
        }
        return .oneOf(needle, out)
    }

    /// `["match", a, label, result, …, fallback]`.
    private func match(_ items: [JSONValue], _ path: String) throws(FilterError) -> FilterExpression {
        guard items.count >= 5, items.count % 2 == 1 else {
            throw FilterError(
                path: path,
                reason: "expected [\"match\", [\"get\", name], label, filter, …, fallback], got \(items.count) elements"
            )
        }
        let input = try operand(items[1], "\(path)[1]")
        if case .literal = input {
            throw FilterError(path: "\(path)[1]", reason: "expected [\"get\", name], the property to match")
        }
        var arms: [FilterMatchArm] = []
        var seen: [PropertyValue] = []
        var count = 0
        var k = 2
        while k + 1 < items.count {
            var labels: [PropertyValue] = []
            if case .array(let list) = items[k] {
                guard !list.isEmpty else {
                    throw FilterError(path: "\(path)[\(k)]", reason: "expected at least one label")
                }
                for (j, v) in list.enumerated() {
                    labels.append(try scalar(v, "\(path)[\(k)][\(j)]", booleans: false))
                }
            } else {
                labels.append(try scalar(items[k], "\(path)[\(k)]", booleans: false))
            }
            for label in labels {
                // MapLibre refuses a label twice too: only the first could ever be chosen.
                if seen.contains(where: { $0.strictlyEquals(label) }) {
                    throw FilterError(path: "\(path)[\(k)]", reason: "label \(label) appears twice")
                }
                seen.append(label)
            }
            count += labels.count
            guard count <= FilterExpression.maxValues else {
                throw FilterError(path: "\(path)[\(k)]", reason: "more than \(FilterExpression.maxValues) labels")
            }
            arms.append(FilterMatchArm(labels: labels, result: try filter(items[k + 1], "\(path)[\(k + 1)]")))
            k += 2
        }
        let fallback = try filter(items[items.count - 1], "\(path)[\(items.count - 1)]")
        return .match(input, arms, fallback: fallback)
    }

    /// `["get", name]`, `["literal", scalar]` or a scalar (`null` included).
    private func operand(_ value: JSONValue, _ path: String) throws(FilterError) -> FilterOperand {
        switch value {
        case .null: return .literal(nil)
        case .bool, .number, .string: return .literal(try scalar(value, path, booleans: true))
        case .array(let items):
            if case .string("get")? = items.first {
                try arity(items, 2, path, "[\"get\", name]")
                return .get(try name(items[1], "\(path)[1]"))
            }
            if case .string("literal")? = items.first {
                try arity(items, 2, path, "[\"literal\", value]")
                if case .null = items[1] { return .literal(nil) }
                return .literal(try scalar(items[1], "\(path)[1]", booleans: true))
            }
            throw FilterError(
                path: path, reason: "expected [\"get\", name] or a string, number, boolean or null, got another array")
        case .object:
            throw FilterError(
                path: path, reason: "expected [\"get\", name] or a string, number, boolean or null, got an object")
        }
    }

    /// A string, a finite number, or (where `booleans`) a boolean.
    private func scalar(_ value: JSONValue, _ path: String, booleans: Bool) throws(FilterError) -> PropertyValue {
        switch value {
        case .string(let s): return .string(s)
        // -0 and 0 are one value; the canonical text writes 0.
        case .number(let d) where d.isFinite: return .number(d == 0 ? 0 : d)
        case .number: throw FilterError(path: path, reason: "expected a finite number")
        case .bool(let b) where booleans: return .bool(b)
        default:
            throw FilterError(
                path: path,
                reason: "expected a string\(booleans ? ", number or boolean" : " or number"), got \(value.kindName)")
        }
    }

    private func name(_ value: JSONValue, _ path: String) throws(FilterError) -> String {
        guard case .string(let s) = value else {
            throw FilterError(path: path, reason: "expected a property name (a string), got \(value.kindName)")
        }
        return s
    }

    private func arity(_ items: [JSONValue], _ count: Int, _ path: String, _ form: String) throws(FilterError) {
        guard items.count == count else {
            throw FilterError(path: path, reason: "expected \(form), got \(items.count) elements")
        }
    }
}
