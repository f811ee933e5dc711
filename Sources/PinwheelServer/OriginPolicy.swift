/// Which web pages may open a WebSocket to this server: the one rule behind both the upgrade check
/// and anything that reports it to a page.
///
/// - No `Origin` header: allowed. Browsers always send one on a WebSocket upgrade; clients that do
///   not (the load tool, producers, scripts) are not web pages, which is all the rule is about.
/// - An empty `Origin`: refused. It names no origin (RFC 6454 never serializes one as empty).
/// - The server's own origin, `scheme://` plus the request's `Host` header (the address the page was
///   loaded from): always allowed, whatever `--allowed-origin` adds.
/// - An origin given with `--allowed-origin` (compared case-insensitively): allowed; `*` allows every
///   origin.
/// - Anything else, `null` included (sandboxed frames, `file:` pages): refused.
public struct OriginPolicy: Sendable, Equatable {
    /// The answer, with a sentence saying why, for a log line or an HTTP body.
    public enum Decision: Sendable, Equatable {
        case allowed(String)
        case refused(String)

        public var isAllowed: Bool {
            if case .allowed = self { return true }
            return false
        }
    }

    /// Origins allowed besides the server's own, as given (`--allowed-origin`).
    public let extraOrigins: [String]
    /// True when `--allowed-origin '*'` allows every origin.
    public let allowsEveryOrigin: Bool
    /// "https" when the server serves TLS, else "http": the scheme of its own origin.
    public let scheme: String

    public init(allowedOrigins: [String], secure: Bool) {
        allowsEveryOrigin = allowedOrigins.contains("*")
        extraOrigins = allowedOrigins.filter { $0 != "*" }
        scheme = secure ? "https" : "http"
    }

    /// Whether a request with these `Origin` and `Host` headers (nil when absent) may open a WebSocket.
    public func allows(origin: String?, host: String?) -> Decision {
        guard let origin else { return .allowed("no Origin header: not a web page") }
        if origin.isEmpty { return .refused("an empty Origin header names no origin") }
        if allowsEveryOrigin { return .allowed("every origin is allowed (--allowed-origin '*')") }
        if let host, "\(scheme)://\(host)".caseInsensitiveCompare(origin) == .orderedSame {
            return .allowed("the server's own origin")
        }
        if extraOrigins.contains(where: { $0.caseInsensitiveCompare(origin) == .orderedSame }) {
            return .allowed("listed with --allowed-origin")
        }
        let own = host.map { "\(scheme)://\($0)" } ?? "its own"
        let listed = extraOrigins.isEmpty ? "" : " and \(extraOrigins.joined(separator: ", "))"
        return .refused("origin \(origin) is not allowed: this server accepts \(own)\(listed)")
    }
}
