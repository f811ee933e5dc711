/// A problem with a message, sent back to the peer as an `error` message. The session stays open.
public struct WireError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The protocol's error codes.
    public enum Code: String, Sendable, CaseIterable {
        /// Not JSON, or JSON that is not an object.
        case badJSON = "bad-json"
        /// A `type` this protocol does not have.
        case unknownType = "unknown-type"
        /// A required field is absent.
        case missingField = "missing-field"
        /// A field of the wrong JSON type or outside its range.
        case invalidField = "invalid-field"
        /// An id the server does not know (e.g. `expand` of a stale id).
        case unknownFeature = "unknown-feature"
        /// A `children` or `leaves` request past the session's rate; `retryMs` says when to ask again.
        case rateLimited = "rate-limited"
        /// A filter (or algorithm) whose index would take the filtered indexes past the server's
        /// `--filter-memory`; the session goes on as it was.
        case filterMemory = "filter-memory"
    }

    public var code: Code
    /// The field at fault, when one is.
    public var field: String?
    /// A sentence for people, naming the field and the value.
    public var message: String
    /// For `rate-limited`: milliseconds until the request would be taken.
    public var retryMs: Int?
    /// The `req` of the `children` or `leaves` request refused, so a client settles exactly that one;
    /// nil for other messages, and for a request whose `req` could not be read.
    public var req: UInt64?

    public init(_ code: Code, field: String? = nil, message: String, retryMs: Int? = nil, req: UInt64? = nil) {
        self.code = code
        self.field = field
        self.message = message
        self.retryMs = retryMs
        self.req = req
    }

    public var description: String { "\(code.rawValue)\(field.map { " (\($0))" } ?? ""): \(message)" }
}
