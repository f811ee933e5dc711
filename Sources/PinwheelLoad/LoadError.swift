/// Why a load run could not start or a scrape failed.
public enum LoadError: Error, Equatable, CustomStringConvertible {
    /// An option outside its range.
    case invalidOption(name: String, value: String, expected: String)
    /// The URL is not `ws://host:port/…` or `wss://…`.
    case invalidURL(String)
    /// The HTTP GET of /metrics failed.
    case scrapeFailed(url: String, reason: String)
    /// The WebSocket client could not start.
    case clientFailed(String)
    /// A process of a test run as several (`--processes`) failed.
    case partFailed(String)

    public var description: String {
        switch self {
        case .invalidOption(let name, let value, let expected): "--\(name) \(value): expected \(expected)"
        case .invalidURL(let url): "invalid URL \(url): expected ws://host:port/ or wss://host:port/"
        case .scrapeFailed(let url, let reason): "could not read \(url): \(reason)"
        case .clientFailed(let reason): "WebSocket client failed to start: \(reason)"
        case .partFailed(let reason): "a process of the tool failed: \(reason)"
        }
    }
}
