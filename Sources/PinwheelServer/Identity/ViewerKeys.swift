import Dispatch
import Foundation
import JWTKit
import PinwheelCore
import Synchronization

/// The key viewers' and producers' tokens are verified with (`--viewer-key`), and the verification
/// itself, which is jwt-kit's: Pinwheel does no cryptography of its own.
///
/// The file is one of: an HS256 secret (the file's bytes, a trailing newline dropped; at least 32
/// bytes), an RS256 or ES256 public key in PEM (`-----BEGIN PUBLIC KEY-----`), or a JWKS
/// (`{"keys":[…]}`, each key picked by the token's `kid`). Only the configured key's algorithm is
/// used, whatever a token's header claims, so a token signed with `none` or with HMAC over a public
/// key never verifies.
public final class ViewerKeys: Sendable {
    /// What the key file holds.
    public enum Kind: String, Sendable, CaseIterable {
        case hs256, rs256, es256, jwks
    }

    /// Fewest bytes of an HS256 secret: RFC 7518 §3.2 asks for a key at least as long as the hash.
    public static let minimumSecretBytes = 32

    public let kind: Kind
    private let keys: JWTKeyCollection

    private init(kind: Kind, keys: JWTKeyCollection) {
        self.kind = kind
        self.keys = keys
    }

    /// Reads a key file.
    /// - Parameters:
    ///   - path: the file.
    ///   - kind: what it holds; nil tells it from the contents (``detectKind(_:)``).
    /// - Throws: ``IdentityError/unreadableKey(path:reason:)`` naming the file and the problem.
    public static func load(path: String, kind: Kind? = nil) async throws -> ViewerKeys {
        let bytes: [UInt8]
        do {
            bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw IdentityError.unreadableKey(path: path, reason: error.localizedDescription)
        }
        return try await make(bytes, kind: kind, path: path)
    }

    /// Keys from a file's contents; `path` only names it in errors.
    static func make(_ bytes: [UInt8], kind: Kind?, path: String) async throws -> ViewerKeys {
        var text = String(decoding: bytes, as: UTF8.self)
        let kind = kind ?? detectKind(text)
        let keys = JWTKeyCollection()
        func fail(_ reason: String) -> IdentityError { .unreadableKey(path: path, reason: reason) }
        switch kind {
        case .hs256:
            var secret = bytes
            if secret.last == UInt8(ascii: "\n") { secret.removeLast() }
            if secret.last == UInt8(ascii: "\r") { secret.removeLast() }
            guard secret.count >= minimumSecretBytes else {
                throw fail("an HS256 secret must be at least \(minimumSecretBytes) bytes, this one is \(secret.count)")
            }
            await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        case .rs256:
            do {
                await keys.add(rsa: try Insecure.RSA.PublicKey(pem: text), digestAlgorithm: .sha256)
            } catch {
                throw fail("not an RSA public key in PEM (-----BEGIN PUBLIC KEY-----): \(error)")
            }
        case .es256:
            do {
                await keys.add(ecdsa: try ES256PublicKey(pem: text))
            } catch {
                throw fail("not a P-256 public key in PEM (-----BEGIN PUBLIC KEY-----): \(error)")
            }
        case .jwks:
            text = text.trimmingCharacters(in: .whitespacesAndNewlines)
            do {
                try await keys.add(jwksJSON: text)
            } catch {
                throw fail("not a JWKS ({\"keys\":[…]}) jwt-kit can read: \(error)")
            }
        }
        return ViewerKeys(kind: kind, keys: keys)
    }

    /// What a key file holds, told from its contents: a JSON object is a JWKS; a PEM public key is
    /// ES256 when it is a P-256 key, else RS256; anything else is an HS256 secret.
    public static func detectKind(_ text: String) -> Kind {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("{") { return .jwks }
        guard trimmed.hasPrefix("-----BEGIN") else { return .hs256 }
        return (try? ES256PublicKey(pem: trimmed)) != nil ? .es256 : .rs256
    }

    /// Verifies a token's signature and reads its claims; then checks `exp` (required) and `nbf`
    /// against `now`. Blocks the calling thread for jwt-kit's verification (microseconds for HS256,
    /// tens of them for RS256).
    /// - Returns: the claims, or the problem in words fit for a close reason.
    public func verify(_ token: String, now: Date = Date()) -> Result<TokenClaims, TokenProblem> {
        let result = Mutex<Result<TokenClaims, TokenProblem>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task { [keys] in
            let outcome: Result<TokenClaims, TokenProblem>
            do {
                let claims = try await keys.verify(token, as: TokenClaims.self)
                outcome = claims.problem(at: now).map { .failure($0) } ?? .success(claims)
            } catch {
                outcome = .failure(TokenProblem(error))
            }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return result.withLock { $0 }!
    }
}

/// Why a token was not accepted, in words a close reason carries (at most 123 bytes).
public struct TokenProblem: Error, Equatable, Sendable {
    public let reason: String
    /// True when the only fault is that the token's time is over.
    public let expired: Bool

    public init(_ reason: String, expired: Bool = false) {
        self.reason = reason
        self.expired = expired
    }

    init(_ error: any Error) {
        if let jwt = error as? JWTError {
            switch jwt.errorType {
            case .signatureVerificationFailed:
                self.init("invalid token: its signature does not verify with the server's key")
            case .malformedToken:
                self.init("invalid token: not a JWT (header.payload.signature in base64url)")
            case .unknownKID, .missingKIDHeader:
                self.init("invalid token: its kid names no key of the server's JWKS")
            default:
                self.init("invalid token: \(jwt.errorType)")
            }
        } else if error is DecodingError {
            self.init("invalid token: claims of the wrong type (tenant must be a string, exp a number)")
        } else {
            self.init("invalid token: \(error)")
        }
    }
}
