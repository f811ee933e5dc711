import Logging
import Testing

@testable import PinwheelServer

@Suite("Origin policy and the refusal log")
struct OriginPolicyTests {
    @Test("no Origin is a non-browser client and allowed; an empty one is refused")
    func missingAndEmpty() {
        let policy = OriginPolicy(allowedOrigins: [], secure: false)
        #expect(policy.allows(origin: nil, host: "127.0.0.1:8080").isAllowed)
        #expect(policy.allows(origin: "", host: "127.0.0.1:8080") == .refused("an empty Origin header names no origin"))
        #expect(!OriginPolicy(allowedOrigins: ["*"], secure: false).allows(origin: "", host: nil).isAllowed)
    }

    @Test("the server's own origin stays allowed whatever --allowed-origin adds; others are refused with a reason")
    func ownOriginAndAdditions() {
        let policy = OriginPolicy(allowedOrigins: ["https://maps.example.org"], secure: false)
        #expect(policy.allows(origin: "http://127.0.0.1:8080", host: "127.0.0.1:8080").isAllowed)
        #expect(policy.allows(origin: "HTTPS://MAPS.example.org", host: "127.0.0.1:8080").isAllowed)
        #expect(
            policy.allows(origin: "http://evil.example", host: "127.0.0.1:8080")
                == .refused(
                    "origin http://evil.example is not allowed: this server accepts http://127.0.0.1:8080 and https://maps.example.org"
                ))
        #expect(!policy.allows(origin: "null", host: "127.0.0.1:8080").isAllowed)
        // Over TLS the own origin is https.
        let secure = OriginPolicy(allowedOrigins: [], secure: true)
        #expect(secure.allows(origin: "https://node.example:443", host: "node.example:443").isAllowed)
        #expect(!secure.allows(origin: "http://node.example:443", host: "node.example:443").isAllowed)
    }

    @Test("* allows every non-empty origin")
    func everyOrigin() {
        let policy = OriginPolicy(allowedOrigins: ["*"], secure: false)
        #expect(policy.allows(origin: "http://anything.example", host: nil).isAllowed)
    }

    @Test("the refusal log writes at most one line a second and counts those it left out")
    func rateLimited() {
        let log = RefusalLog(logger: Logger(label: "test"), interval: .seconds(1))
        let start = ContinuousClock.now
        #expect(log.note("refused", now: start) == "refused")
        #expect(log.note("refused", now: start + .milliseconds(100)) == nil)
        #expect(log.note("refused", now: start + .milliseconds(900)) == nil)
        #expect(log.note("refused", now: start + .milliseconds(1000)) == "refused (2 more refused since the last line)")
        #expect(log.note("refused", now: start + .seconds(3)) == "refused")
    }
}
