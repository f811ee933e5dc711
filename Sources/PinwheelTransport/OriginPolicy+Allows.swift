extension OriginPolicy {
    /// Whether a browser page from `origin` may open a WebSocket and read the files served to other
    /// origins.
    /// - Parameters:
    ///   - origin: the request's `Origin` header, e.g. "https://maps.example.org".
    ///   - host: the request's `Host` header, which `.sameOrigin` compares with; nil when absent.
    ///   - secure: whether the server answers https/wss (the scheme of its own origin).
    /// - Returns: true for an origin the policy names (case-insensitively) or, for `.sameOrigin`, the
    ///   server's own.
    public func allows(origin: String, host: String?, secure: Bool) -> Bool {
        switch self {
        case .any:
            return true
        case .allowList(let origins):
            return origins.contains { $0.caseInsensitiveCompare(origin) == .orderedSame }
        case .sameOrigin:
            guard let host else { return false }
            return "\(secure ? "https" : "http")://\(host)".caseInsensitiveCompare(origin) == .orderedSame
        }
    }
}
