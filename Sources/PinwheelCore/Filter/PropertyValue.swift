/// A point's property value with its type: what a CSV cell, a GeoJSON property or a producer's change
/// brought. A property a point does not have is `nil` where one of these is expected.
public enum PropertyValue: Hashable, Sendable, CustomStringConvertible {
    case string(String)
    /// Always finite.
    case number(Double)
    case bool(Bool)

    /// Whether two values are the same value of the same type, strings compared byte by byte (as
    /// JavaScript compares them, without Unicode normalisation).
    @inlinable public func strictlyEquals(_ other: PropertyValue) -> Bool {
        switch (self, other) {
        case (.string(let a), .string(let b)): a.utf8.elementsEqual(b.utf8)
        case (.number(let a), .number(let b)): a == b
        case (.bool(let a), .bool(let b)): a == b
        default: false
        }
    }

    /// How two values order: numbers by value, strings by code point; nil for any other pair, which
    /// no ordering comparison holds for.
    @inlinable public func order(_ other: PropertyValue) -> Int? {
        switch (self, other) {
        case (.number(let a), .number(let b)): a < b ? -1 : (a > b ? 1 : 0)
        case (.string(let a), .string(let b)):
            // UTF-8 byte order is code-point order.
            a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : (b.utf8.lexicographicallyPrecedes(a.utf8) ? 1 : 0)
        default: nil
        }
    }

    /// The name of the value's type in errors: "a string", "a number", "a boolean".
    public var kindName: String {
        switch self {
        case .string: "a string"
        case .number: "a number"
        case .bool: "a boolean"
        }
    }

    /// The value as it is written in JSON.
    public var description: String {
        var writer = JSONWriter(capacity: 32)
        write(into: &writer)
        return writer.text
    }

    /// Appends the value as JSON.
    public func write(into writer: inout JSONWriter) {
        switch self {
        case .string(let s): writer.string(s)
        case .number(let d): writer.number(d)
        case .bool(let b): writer.bool(b)
        }
    }
}

extension PropertyValue: ExpressibleByStringLiteral, ExpressibleByFloatLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension PropertyValue {
    /// The cell a value is stored as: nil for an empty string, which is no value (as an empty CSV cell).
    @inlinable public static func cell(_ value: PropertyValue) -> PropertyValue? {
        if case .string(let s) = value, s.isEmpty { return nil }
        return value
    }

    /// The value a JSON property holds: strings, finite numbers and booleans keep their type; `null`
    /// and the empty string are no value; arrays and objects are kept as their compact JSON text.
    public init?(json: JSONValue) {
        switch json {
        case .null: return nil
        case .string(let s) where s.isEmpty: return nil
        case .string(let s): self = .string(s)
        case .number(let d) where d.isFinite: self = .number(d == 0 ? 0 : d)
        case .bool(let b): self = .bool(b)
        default:
            var writer = JSONWriter(capacity: 32)
            writer.value(json)
            self = .string(writer.text)
        }
    }

    /// The number a value holds: a number as it is, a string that reads as one (as aggregates take a
    /// CSV cell); nil otherwise.
    public var numberValue: Double? {
        switch self {
        case .number(let d): d
        case .string(let s): Double(s.trimmingSpaces())
        case .bool: nil
        }
    }
}
