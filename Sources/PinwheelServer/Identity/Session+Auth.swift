import Foundation
import PinwheelCore
import PinwheelTransport

/// Where a session stands with its viewer's token.
enum ViewerGate {
    /// The server takes no tokens (no `--viewer-key`): every viewer sees everything.
    case anonymous
    /// No valid `auth` yet; past the deadline the session is closed.
    case awaiting(deadline: ContinuousClock.Instant)
    /// Served under `scope` until `expires`, unless a fresh token comes first.
    case authenticated(scope: ViewerScope, subject: String?, expires: Date)
}

/// The close codes of viewer identity (docs/protocol.md).
enum AuthClose {
    /// No token, a token that does not verify, or one whose time is over.
    static let unauthorized: UInt16 = 4401
    /// A valid token that does not give what was asked: a refresh that changes the scope, a filter
    /// claim that cannot be read.
    static let forbidden: UInt16 = 4403
}

/// Viewer identity: the first message of a session on a server with `--viewer-key` must be
/// `{"type":"auth","token":"<JWT>"}`; the session is greeted and served under the token's scope once
/// it verifies, and closed with 4401 when its `exp` passes unless a fresh `auth` came first.
extension Session {
    /// Whether a client message may go on to the machine: an `auth` is taken here (false), anything
    /// before a valid one closes the session (false). Worker-only.
    func admits(_ bytes: [UInt8], actions: inout SessionActions<ContinuousClock>) -> Bool {
        if case .anonymous = gate { return true }
        switch AuthMessage.read(bytes) {
        case .notAuth:
            if case .awaiting = gate {
                refuseUnauthenticated()
                return false
            }
            return true
        case .invalid(let reason):
            end(code: AuthClose.unauthorized, reason: reason)
            return false
        case .token(let token):
            authenticate(token, actions: &actions)
            return false
        }
    }

    /// Whether the session shows its viewport to others and sees theirs: not when its token limits it
    /// to a scope, since where a tenant's viewers look is that tenant's too. Worker-only.
    var sharesPresence: Bool {
        if case .authenticated(let scope, _, _) = gate { return scope.isUnbounded }
        return true
    }

    /// Closes a session that sent something other than `auth` first.
    func refuseUnauthenticated() {
        end(code: AuthClose.unauthorized, reason: #"authentication required: send {"type":"auth","token":…} first"#)
    }

    /// At a tick: closes the session whose auth deadline or token expiry has passed. - Returns: false
    /// when it did. Worker-only.
    func gateHolds() -> Bool {
        switch gate {
        case .anonymous:
            return true
        case .awaiting(let deadline):
            guard ContinuousClock.now >= deadline else { return true }
            let seconds = (host.viewerIdentity?.authDeadline ?? .zero).components.seconds
            end(code: AuthClose.unauthorized, reason: "no auth message within \(seconds) s of connecting")
            return false
        case .authenticated(_, _, let expires):
            guard Date() >= expires else { return true }
            end(code: AuthClose.unauthorized, reason: "token expired")
            return false
        }
    }

    private func authenticate(_ token: String, actions: inout SessionActions<ContinuousClock>) {
        guard let identity = host.viewerIdentity else { return }
        let claims: TokenClaims
        switch identity.keys.verify(token) {
        case .failure(let problem):
            return end(code: AuthClose.unauthorized, reason: problem.reason)
        case .success(let verified):
            claims = verified
        }
        let scope = claims.scope
        let expires = claims.exp!.value
        switch gate {
        case .anonymous:
            return
        case .authenticated(let current, let subject, _):
            guard scope == current else {
                return end(
                    code: AuthClose.forbidden,
                    reason: "a refreshed token must carry the session's tenant and filter claims unchanged")
            }
            gate = .authenticated(scope: current, subject: subject, expires: expires)
        case .awaiting:
            let expression: FilterExpression?
            do {
                expression = try scope.expression(tenantColumn: identity.tenantColumn)
            } catch {
                return end(code: AuthClose.forbidden, reason: "token \(error)")
            }
            let start = host.sessionStart(encoding: encoding)
            if expression != nil {
                // The scope's index, built (or refused) before the session is served, and held from now
                // on: a viewer that cannot have it is closed rather than shown more than its scope.
                let scoped = EffectiveFilter(scope: expression)
                do throws(FilterRefusal) {
                    _ = try host.clusterer(for: start.algorithm, filter: scoped)
                } catch {
                    return end(code: FilterMemoryClose.code, reason: error.closeReason)
                }
                holdFilter(scoped)
            }
            gate = .authenticated(scope: scope, subject: claims.sub?.value, expires: expires)
            replaceMachine(
                with: Self.machine(connection: connection, start: start, scope: expression, host: host))
            // Before hello: the client learns its token's expiry first.
            _ = host.send(AuthMessage.accepted(expires: expires), type: "auth", to: connection)
            greet(actions: &actions)
            host.wake(self, at: ContinuousClock.now + .seconds(max(0, expires.timeIntervalSinceNow)))
            return
        }
        _ = host.send(AuthMessage.accepted(expires: expires), type: "auth", to: connection)
        host.wake(self, at: ContinuousClock.now + .seconds(max(0, expires.timeIntervalSinceNow)))
    }
}

/// The `auth` message: `{"type":"auth","token":"<JWT>"}` from the client, `{"type":"auth","exp":N}`
/// back when the token is accepted.
enum AuthMessage {
    enum Reading: Equatable {
        case notAuth
        case invalid(String)
        case token(String)
    }

    /// Reads a client message as `auth` when it is one; others are not parsed beyond a byte search.
    static func read(_ bytes: [UInt8]) -> Reading {
        guard bytes.count < 16 * 1024, contains(bytes, #""auth""#) else { return .notAuth }
        guard case .object(let object)? = try? JSONReader.parse(bytes),
            object["type"] == .string("auth")
        else { return .notAuth }
        guard case .string(let token)? = object["token"], !token.isEmpty else {
            return .invalid(#"auth needs a token: {"type":"auth","token":"<JWT>"}"#)
        }
        return .token(token)
    }

    /// The answer to an accepted token.
    static func accepted(expires: Date) -> [UInt8] {
        Array(#"{"type":"auth","exp":\#(Int64(expires.timeIntervalSince1970))}"#.utf8)
    }

    private static func contains(_ bytes: [UInt8], _ needle: String) -> Bool {
        let n = Array(needle.utf8)
        guard bytes.count >= n.count else { return false }
        for start in 0...(bytes.count - n.count) where bytes[start] == n[0] {
            if bytes[start..<start + n.count].elementsEqual(n) { return true }
        }
        return false
    }
}
