/// A parsed `ws://` or `wss://` URL.
public struct WebSocketURL: Equatable, Sendable {
    public var secure: Bool
    public var host: String
    public var port: Int
    /// Path and query, starting with "/".
    public var path: String

    /// Parses `ws://host[:port][/path]` or `wss://…`; IPv6 hosts go in brackets.
    /// - Throws: `TransportError.invalidURL` for anything else.
    public init(_ text: String) throws {
        let rest: Substring
        if text.hasPrefix("ws://") {
            secure = false
            rest = text.dropFirst(5)
        } else if text.hasPrefix("wss://") {
            secure = true
            rest = text.dropFirst(6)
        } else {
            throw TransportError.invalidURL(text)
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        let tail = rest.dropFirst(authority.count)
        path = tail.isEmpty ? "/" : (tail.hasPrefix("/") ? String(tail) : "/" + tail)
        var hostPart = authority
        var portPart: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw TransportError.invalidURL(text) }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                portPart = after.dropFirst()
            } else if !after.isEmpty {
                throw TransportError.invalidURL(text)
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portPart = authority[authority.index(after: colon)...]
        }
        guard !hostPart.isEmpty else { throw TransportError.invalidURL(text) }
        host = String(hostPart)
        if let portPart {
            guard let value = Int(portPart), (1...65535).contains(value) else { throw TransportError.invalidURL(text) }
            port = value
        } else {
            port = secure ? 443 : 80
        }
    }

    /// The Host header value: the host, plus the port unless it is the scheme's default.
    public var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == (secure ? 443 : 80) ? name : "\(name):\(port)"
    }
}
