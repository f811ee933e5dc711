/// What went wrong in the libwebsockets transport; C failures name the C function that failed.
public enum TransportError: Error, Equatable, CustomStringConvertible {
    /// A libwebsockets call failed; `function` is its C name, `detail` what was being attempted.
    case lwsCallFailed(function: String, detail: String)
    /// The configuration cannot work; `field` names the option, `value` the offending value.
    case invalidConfiguration(field: String, value: String)
    /// A `ws://` or `wss://` URL that could not be parsed.
    case invalidURL(String)
    /// `start` was called twice, or a route was added after `start`.
    case alreadyStarted
    /// An operation that needs a running service thread was called before `start` or after `stop`.
    case notRunning

    public var description: String {
        switch self {
        case .lwsCallFailed(let function, let detail): return "\(function) failed: \(detail)"
        case .invalidConfiguration(let field, let value): return "invalid \(field): \(value)"
        case .invalidURL(let url): return "invalid WebSocket URL: \(url)"
        case .alreadyStarted: return "the transport is already started"
        case .notRunning: return "the transport is not running"
        }
    }
}
