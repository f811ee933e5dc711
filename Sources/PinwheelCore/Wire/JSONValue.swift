/// A parsed JSON value. Numbers are doubles (ids below 2^53 are exact); `NaN`, `Infinity` and
/// `-Infinity` literals are read as numbers so validation can name the field that holds them.
public enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// Whether it is an array or an object.
    public var isComposite: Bool {
        switch self {
        case .array, .object: true
        default: false
        }
    }

    /// A short name of the value's kind for error messages ("a string", "an array" ...).
    public var kindName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A JSON object: its members and where it started in the source, so errors can name a line.
public struct JSONObject: Equatable, Sendable {
    /// Members by key; a repeated key keeps its last value.
    public var members: [String: JSONValue]
    /// Byte offset of the opening brace in the parsed text.
    public var offset: Int

    public init(members: [String: JSONValue], offset: Int = 0) {
        self.members = members
        self.offset = offset
    }

    public subscript(key: String) -> JSONValue? { members[key] }
}
