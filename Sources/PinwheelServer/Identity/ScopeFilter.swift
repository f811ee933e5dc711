import PinwheelCore

/// A scope's expression compiled against a dataset's columns: which rows it keeps.
///
/// The subset of the style-spec syntax scopes use: `["==", ["get", c], v]`, `["!=", ["get", c], v]`,
/// `["all", …]`, `["any", …]`, `["!", e]`. Property values are compared as text, a number in the
/// expression with the number a value reads as. A property a point lacks reads as empty.
public indirect enum ScopeFilter: Sendable, Equatable {
    case equal(column: String, value: JSONValue)
    case notEqual(column: String, value: JSONValue)
    case all([ScopeFilter])
    case any([ScopeFilter])
    case not(ScopeFilter)

    /// Reads an expression.
    /// - Throws: ``IdentityError/invalidFilter(_:)`` naming the offending position, `filter[1][0]: …`.
    public static func parse(_ value: JSONValue, at path: String = "filter") throws -> ScopeFilter {
        guard case .array(let items) = value, case .string(let op)? = items.first else {
            throw IdentityError.invalidFilter(
                "\(path): expected an array starting with an operator, got \(value.kindName)")
        }
        switch op {
        case "==", "!=":
            guard items.count == 3, case .array(let get) = items[1], get.count == 2, get[0] == .string("get"),
                case .string(let column) = get[1]
            else {
                throw IdentityError.invalidFilter("\(path)[1]: expected [\"get\", <property>]")
            }
            switch items[2] {
            case .string, .number, .bool: break
            default: throw IdentityError.invalidFilter("\(path)[2]: expected a string, number or boolean")
            }
            return op == "==" ? .equal(column: column, value: items[2]) : .notEqual(column: column, value: items[2])
        case "all", "any":
            let terms = try items.dropFirst().enumerated().map { try parse($1, at: "\(path)[\($0 + 1)]") }
            return op == "all" ? .all(terms) : .any(terms)
        case "!":
            guard items.count == 2 else { throw IdentityError.invalidFilter("\(path): \"!\" takes one expression") }
            return .not(try parse(items[1], at: "\(path)[1]"))
        default:
            throw IdentityError.invalidFilter("\(path)[0]: unknown operator \"\(op)\" (==, !=, all, any, !)")
        }
    }

    /// Whether row `row` of `properties` matches.
    public func matches(row: Int, in properties: PropertyTable) -> Bool {
        switch self {
        case .equal(let column, let value):
            return Self.equals(Self.text(column, row, properties), value)
        case .notEqual(let column, let value):
            return !Self.equals(Self.text(column, row, properties), value)
        case .all(let terms):
            return terms.allSatisfy { $0.matches(row: row, in: properties) }
        case .any(let terms):
            return terms.contains { $0.matches(row: row, in: properties) }
        case .not(let term):
            return !term.matches(row: row, in: properties)
        }
    }

    /// Whether a point with these property values matches (an upsert's properties, say).
    public func matches(_ values: [String: String]) -> Bool {
        let columns = Array(values.keys)
        return matches(row: 0, in: PropertyTable(columns: columns, values: columns.map { values[$0]! }))
    }

    private static func text(_ column: String, _ row: Int, _ properties: PropertyTable) -> String {
        guard let c = properties.columns.firstIndex(of: column) else { return "" }
        return properties.value(row: row, column: c)
    }

    private static func equals(_ text: String, _ value: JSONValue) -> Bool {
        switch value {
        case .string(let s): return text == s
        case .number(let n): return Double(text) == n
        case .bool(let b): return text == (b ? "true" : "false")
        default: return false
        }
    }
}
