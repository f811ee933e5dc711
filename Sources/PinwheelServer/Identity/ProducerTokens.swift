import Foundation

/// `--producer-tokens`: tokens that each let a producer change only one tenant's points.
public enum ProducerTokens {
    /// Fewest characters of a token, as for `--ingest-token-file`.
    public static let minimumTokenLength = 16

    /// Reads `TOKEN TENANT` lines; blank lines and lines starting with `#` are skipped.
    /// - Returns: tenant by token.
    /// - Throws: ``IdentityError/unreadableProducerTokens(path:line:reason:)`` naming the line.
    public static func parse(_ text: String, path: String) throws -> [String: String] {
        var tokens: [String: String] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            func fail(_ reason: String) -> IdentityError {
                .unreadableProducerTokens(path: path, line: index + 1, reason: reason)
            }
            guard fields.count == 2 else { throw fail("expected 'TOKEN TENANT', got \(fields.count) fields") }
            let token = String(fields[0])
            guard token.count >= minimumTokenLength else {
                throw fail("a token must be at least \(minimumTokenLength) characters")
            }
            guard tokens[token] == nil else { throw fail("this token is listed twice") }
            tokens[token] = String(fields[1])
        }
        guard !tokens.isEmpty else {
            throw IdentityError.unreadableProducerTokens(path: path, line: 0, reason: "no tokens")
        }
        return tokens
    }
}
