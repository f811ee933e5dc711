/// A named boolean rule over a point's properties, whose matches every cluster counts
/// (`serve --flag alert=["==",["get","status"],"alarm"]`), so a page can ring the clusters that hide
/// one.
///
/// The rule is a small subset of MapLibre's expression syntax, enough for flags:
/// `["==", ["get", COLUMN], VALUE]`, `["!=", ["get", COLUMN], VALUE]`,
/// `["in", ["get", COLUMN], ["literal", [VALUE, …]]]`, and `["all", …]`, `["any", …]`, `["!", RULE]`
/// over those. A VALUE is a string, a number, a boolean or `null`; property cells are text, so a
/// string matches the cell's text, a number a cell that reads as that number, a boolean the text
/// `true` or `false`, and `null` a blank or missing cell.
public struct FlagRule: Equatable, Sendable {
    /// The key on the wire (hello's `flags`).
    public var name: String
    /// The rule as written, for messages.
    public var text: String
    let test: Test

    /// A parsed rule; columns by name, resolved against a table's columns when evaluated.
    indirect enum Test: Equatable, Sendable {
        case equals(column: String, value: JSONValue)
        case notEquals(column: String, value: JSONValue)
        case oneOf(column: String, values: [JSONValue])
        case all([Test])
        case any([Test])
        case not(Test)
    }

    /// Reads `NAME=EXPR`.
    /// - Throws: ``IndexError/invalidFlag(text:reason:)`` naming the position at fault, e.g. `flag[1]`.
    public init(parsing written: String) throws(IndexError) {
        guard let equals = written.firstIndex(of: "=") else {
            throw .invalidFlag(
                text: written, reason: "expected NAME=EXPR, e.g. alert=[\"==\",[\"get\",\"status\"],\"alarm\"]")
        }
        let name = String(written[..<equals]).trimmingSpaces()
        guard !name.isEmpty else { throw .invalidFlag(text: written, reason: "the name is empty") }
        let expression = String(written[written.index(after: equals)...])
        let value: JSONValue
        do {
            value = try JSONReader.parse(expression)
        } catch {
            throw .invalidFlag(text: written, reason: "the rule is not JSON: \(error)")
        }
        do {
            test = try Self.test(value, at: "flag")
        } catch let reason {
            throw .invalidFlag(text: written, reason: reason.text)
        }
        self.name = name
        text = expression
    }

    /// The columns the rule reads.
    public var columns: [String] { Self.columns(of: test) }

    /// Whether a point's properties match.
    /// - Parameter value: a column's cell text for the point, nil when it has no such column.
    func matches(_ value: (String) -> String?) -> Bool {
        Self.matches(test, value)
    }

    private static func matches(_ test: Test, _ value: (String) -> String?) -> Bool {
        switch test {
        case .equals(let column, let expected): return equal(value(column), expected)
        case .notEquals(let column, let expected): return !equal(value(column), expected)
        case .oneOf(let column, let values):
            let cell = value(column)
            return values.contains { equal(cell, $0) }
        case .all(let tests): return tests.allSatisfy { matches($0, value) }
        case .any(let tests): return tests.contains { matches($0, value) }
        case .not(let inner): return !matches(inner, value)
        }
    }

    /// A cell (nil or blank: no value) against a rule's value.
    private static func equal(_ cell: String?, _ expected: JSONValue) -> Bool {
        let text = cell?.trimmingSpaces() ?? ""
        switch expected {
        case .null: return text.isEmpty
        case .string(let s): return cell == s
        case .number(let n): return Double(text) == n
        case .bool(let b): return text == (b ? "true" : "false")
        case .array, .object: return false
        }
    }

    private static func columns(of test: Test) -> [String] {
        switch test {
        case .equals(let c, _), .notEquals(let c, _), .oneOf(let c, _): [c]
        case .all(let tests), .any(let tests): tests.flatMap(columns)
        case .not(let inner): columns(of: inner)
        }
    }

    /// Why a rule does not parse, with the position of the part at fault.
    struct Problem: Error {
        var text: String
    }

    private static func test(_ value: JSONValue, at path: String) throws(Problem) -> Test {
        guard case .array(let items) = value, case .string(let op)? = items.first else {
            throw Problem(text: "\(path): expected an expression [\"OP\", …], got \(value.kindName)")
        }
        switch op {
        case "==", "!=":
            guard items.count == 3 else {
                throw Problem(text: "\(path): \"\(op)\" takes 2 arguments, got \(items.count - 1)")
            }
            let column = try get(items[1], at: "\(path)[1]")
            let expected = try literal(items[2], at: "\(path)[2]")
            return op == "==" ? .equals(column: column, value: expected) : .notEquals(column: column, value: expected)
        case "in":
            guard items.count == 3 else {
                throw Problem(text: "\(path): \"in\" takes 2 arguments, got \(items.count - 1)")
            }
            let column = try get(items[1], at: "\(path)[1]")
            guard case .array(let wrapped) = items[2], wrapped.count == 2, wrapped[0] == .string("literal"),
                case .array(let values) = wrapped[1]
            else {
                throw Problem(text: "\(path)[2]: expected [\"literal\", [VALUE, …]]")
            }
            var checked: [JSONValue] = []
            for (k, v) in values.enumerated() { checked.append(try literal(v, at: "\(path)[2][1][\(k)]")) }
            return .oneOf(column: column, values: checked)
        case "all", "any":
            var tests: [Test] = []
            for k in items.indices.dropFirst() { tests.append(try test(items[k], at: "\(path)[\(k)]")) }
            return op == "all" ? .all(tests) : .any(tests)
        case "!":
            guard items.count == 2 else {
                throw Problem(text: "\(path): \"!\" takes 1 argument, got \(items.count - 1)")
            }
            return .not(try test(items[1], at: "\(path)[1]"))
        default:
            throw Problem(text: "\(path)[0]: \"\(op)\" is not one of ==, !=, in, all, any, !")
        }
    }

    private static func get(_ value: JSONValue, at path: String) throws(Problem) -> String {
        guard case .array(let items) = value, items.count == 2, items[0] == .string("get"),
            case .string(let column) = items[1], !column.isEmpty
        else {
            throw Problem(text: "\(path): expected [\"get\", COLUMN]")
        }
        return column
    }

    private static func literal(_ value: JSONValue, at path: String) throws(Problem) -> JSONValue {
        switch value {
        case .null, .bool, .string: return value
        case .number(let n) where n.isFinite: return value
        default: throw Problem(text: "\(path): expected a string, a number, a boolean or null, got \(value.kindName)")
        }
    }
}
