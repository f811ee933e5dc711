/// What can go wrong setting up identity: a key file, a producer token file.
public enum IdentityError: Error, Equatable, CustomStringConvertible {
    case unreadableKey(path: String, reason: String)
    case unreadableProducerTokens(path: String, line: Int, reason: String)

    public var description: String {
        switch self {
        case .unreadableKey(let path, let reason): "--viewer-key \(path): \(reason)"
        case .unreadableProducerTokens(let path, let line, let reason):
            "--producer-tokens \(path)\(line > 0 ? ":\(line)" : ""): \(reason)"
        }
    }
}
