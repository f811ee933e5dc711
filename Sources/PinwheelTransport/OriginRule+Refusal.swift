extension OriginRule {
    /// Why a request with these headers may not open a WebSocket (nor read files served across
    /// origins), nil when it may. Lws service thread only, for `.checkedBy`.
    /// - Parameters:
    ///   - origin: the `Origin` header, "" when present but empty, nil when absent (a non-browser
    ///     client, which the browser's same-origin protection does not concern).
    ///   - host: the `Host` header, which the server's own origin is made from; nil when absent.
    ///   - secure: whether the server answers https/wss (the scheme of its own origin).
    public func refusal(origin: String?, host: String?, secure: Bool) -> String? {
        if case .checkedBy(let check) = self { return check(origin, host) }
        guard let origin else { return nil }
        if origin.isEmpty { return "an empty Origin header names no origin" }
        switch self {
        case .any, .checkedBy:
            return nil
        case .allowList(let origins):
            let listed = origins.contains { $0.caseInsensitiveCompare(origin) == .orderedSame }
            return listed ? nil : "origin \(origin) is not allowed"
        case .sameOrigin:
            let own = host.map { "\(secure ? "https" : "http")://\($0)".caseInsensitiveCompare(origin) == .orderedSame }
            return own == true ? nil : "origin \(origin) is not this server's own"
        }
    }
}
