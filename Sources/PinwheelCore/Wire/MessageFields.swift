/// Reads the fields of one message object, turning every absence or mismatch into a ``WireError``
/// that names the field.
struct MessageFields {
    let object: JSONObject
    /// The message type, for error messages ("viewport needs ...").
    let type: String

    /// Ids and counters travel as JSON numbers; above 2^53 a JavaScript number is no longer exact.
    static let maxWhole: Double = 9_007_199_254_740_991

    /// The JSON object `bytes` hold; `what` names it in errors ("a message", "a change").
    static func object(_ bytes: UnsafeBufferPointer<UInt8>, what: String) throws(WireError) -> JSONObject {
        let value: JSONValue
        do {
            value = try JSONReader.parse(bytes)
        } catch {
            throw WireError(.badJSON, message: "not JSON: \(error.description)")
        }
        guard case .object(let object) = value else {
            throw WireError(.badJSON, message: "\(what) must be a JSON object, got \(value.kindName)")
        }
        return object
    }

    static func root(_ bytes: UnsafeBufferPointer<UInt8>) throws(WireError) -> MessageFields {
        let object = try object(bytes, what: "a message")
        guard let typeValue = object["type"] else {
            throw WireError(.missingField, field: "type", message: "a message needs a \"type\"")
        }
        guard case .string(let type) = typeValue else {
            throw WireError(.invalidField, field: "type", message: "type must be a string, got \(typeValue.kindName)")
        }
        return MessageFields(object: object, type: type)
    }

    func value(_ name: String) throws(WireError) -> JSONValue {
        guard let v = object[name], v != .null else {
            throw WireError(.missingField, field: name, message: "\(type) needs \"\(name)\"")
        }
        return v
    }

    func has(_ name: String) -> Bool {
        if let v = object[name], v != .null { return true }
        return false
    }

    static func invalid(_ name: String, _ text: String) -> WireError {
        WireError(.invalidField, field: name, message: "\(name) \(text)")
    }

    /// A finite number, optionally within a closed range.
    func number(_ name: String, in range: ClosedRange<Double>? = nil) throws(WireError) -> Double {
        try MessageFields.number(value(name), name: name, in: range)
    }

    static func number(_ v: JSONValue, name: String, in range: ClosedRange<Double>? = nil) throws(WireError) -> Double {
        guard case .number(let d) = v else { throw invalid(name, "must be a number, got \(v.kindName)") }
        guard d.isFinite else { throw invalid(name, "must be a finite number, got \(d)") }
        if let range, !range.contains(d) {
            throw invalid(
                name, "must be between \(format(range.lowerBound)) and \(format(range.upperBound)), got \(format(d))")
        }
        return d
    }

    /// A whole number in `range` (default 0...2^53-1).
    func whole(_ name: String, in range: ClosedRange<Double> = 0...maxWhole) throws(WireError) -> UInt64 {
        try MessageFields.whole(value(name), name: name, in: range)
    }

    static func whole(_ v: JSONValue, name: String, in range: ClosedRange<Double> = 0...maxWhole) throws(WireError)
        -> UInt64
    {
        let d = try number(v, name: name)
        guard d == d.rounded(.towardZero) else { throw invalid(name, "must be a whole number, got \(format(d))") }
        guard range.contains(d) else {
            throw invalid(
                name, "must be between \(format(range.lowerBound)) and \(format(range.upperBound)), got \(format(d))")
        }
        return UInt64(d)
    }

    func string(_ name: String) throws(WireError) -> String {
        let v = try value(name)
        guard case .string(let s) = v else { throw MessageFields.invalid(name, "must be a string, got \(v.kindName)") }
        return s
    }

    func bool(_ name: String) throws(WireError) -> Bool {
        let v = try value(name)
        guard case .bool(let b) = v else {
            throw MessageFields.invalid(name, "must be true or false, got \(v.kindName)")
        }
        return b
    }

    func array(_ name: String) throws(WireError) -> [JSONValue] {
        let v = try value(name)
        guard case .array(let a) = v else { throw MessageFields.invalid(name, "must be an array, got \(v.kindName)") }
        return a
    }

    func object(_ name: String) throws(WireError) -> MessageFields {
        let v = try value(name)
        guard case .object(let o) = v else { throw MessageFields.invalid(name, "must be an object, got \(v.kindName)") }
        return MessageFields(object: o, type: name)
    }

    /// A number for a message: whole numbers without ".0", others in Swift's shortest form.
    static func format(_ d: Double) -> String {
        if d.isFinite && d == d.rounded(.towardZero) && d.magnitude <= maxWhole { return String(Int64(d)) }
        return String(d)
    }
}
