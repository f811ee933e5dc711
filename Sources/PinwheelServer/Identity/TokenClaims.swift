import Foundation
import JWTKit
import PinwheelCore

/// The claims Pinwheel reads from a viewer's or a producer's token. Others are ignored.
///
/// - `exp` (required): when the token stops being accepted, seconds since 1970.
/// - `nbf` (optional): before it, the token is not accepted yet.
/// - `sub` (optional): who the viewer is, for the log.
/// - `tenant` (optional): a string; the session sees only points whose tenant column equals it, a
///   producer changes only such points.
/// - `filter` (optional, viewers): an expression the session's points must also match.
public struct TokenClaims: JWTPayload, Equatable {
    public var exp: ExpirationClaim?
    public var nbf: NotBeforeClaim?
    public var sub: SubjectClaim?
    public var tenant: String?
    public var filter: ClaimJSON?

    public init(exp: Date?, tenant: String? = nil, filter: JSONValue? = nil, sub: String? = nil) {
        self.exp = exp.map { ExpirationClaim(value: $0) }
        self.tenant = tenant
        self.filter = filter.map { ClaimJSON($0) }
        self.sub = sub.map { SubjectClaim(value: $0) }
    }

    /// Checked after decoding, by ``problem(at:)``, so each fault gets its own close reason.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// Why the claims are not acceptable at `now`, nil when they are.
    func problem(at now: Date) -> TokenProblem? {
        guard let exp else { return TokenProblem("invalid token: it has no exp claim (tokens must expire)") }
        if exp.value <= now { return TokenProblem("token expired", expired: true) }
        if let nbf, nbf.value > now { return TokenProblem("invalid token: not valid before its nbf") }
        if let tenant, tenant.isEmpty { return TokenProblem("invalid token: its tenant claim is empty") }
        return nil
    }

    /// The scope these claims give: their tenant and filter.
    public var scope: ViewerScope { ViewerScope(tenant: tenant, filter: filter?.value) }
}

/// Any JSON in a claim, read into the core's ``JSONValue``.
public struct ClaimJSON: Codable, Equatable, Sendable {
    public let value: JSONValue

    public init(_ value: JSONValue) { self.value = value }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            value = .null
        } else if let b = try? c.decode(Bool.self) {
            value = .bool(b)
        } else if let n = try? c.decode(Double.self) {
            value = .number(n)
        } else if let s = try? c.decode(String.self) {
            value = .string(s)
        } else if let a = try? c.decode([ClaimJSON].self) {
            value = .array(a.map(\.value))
        } else {
            let o = try c.decode([String: ClaimJSON].self)
            value = .object(JSONObject(members: o.mapValues(\.value)))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch value {
        case .null: try c.encodeNil()
        case .bool(let b): try c.encode(b)
        case .number(let n): try c.encode(n)
        case .string(let s): try c.encode(s)
        case .array(let a): try c.encode(a.map(ClaimJSON.init))
        case .object(let o): try c.encode(o.members.mapValues(ClaimJSON.init))
        }
    }
}
