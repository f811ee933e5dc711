import Testing

@testable import PinwheelTransport

@Suite("HTTP request rules, body pace and the listen address")
struct HTTPRequestRulesTests {
    @Test("Content-Length is 1 to 15 plain digits: signs, lists, spaces, letters and overflow are refused")
    func contentLength() {
        #expect(HTTPRequestRules.contentLength(Array("0".utf8)) == 0)
        #expect(HTTPRequestRules.contentLength(Array("16000000".utf8)) == 16_000_000)
        #expect(HTTPRequestRules.contentLength(Array("999999999999999".utf8)) == 999_999_999_999_999)
        for bad in [
            "", "+5", "-5", "5,5", "5,6", " 5", "5 ", "five", "0x10", "1000000000000000", "99999999999999999999",
        ] {
            #expect(HTTPRequestRules.contentLength(Array(bad.utf8)) == nil, "\(bad)")
        }
    }

    @Test("header values may hold HTAB and visible bytes, not NUL, other controls or DEL")
    func controlBytes() {
        #expect(!HTTPRequestRules.isForbidden(0x09))
        #expect(!HTTPRequestRules.isForbidden(0x20))
        #expect(!HTTPRequestRules.isForbidden(0x7E))
        #expect(!HTTPRequestRules.isForbidden(0xC3))
        for byte: UInt8 in [0x00, 0x01, 0x0A, 0x0D, 0x1B, 0x1F, 0x7F] {
            #expect(HTTPRequestRules.isForbidden(byte), "\(byte)")
        }
    }

    @Test("a body is on time until its deadline, and behind once past the grace it has less than the rate owed")
    func pace() {
        let start = ContinuousClock.now
        let pace = HTTPBodyPace(started: start, deadline: start + .seconds(20), minimumRate: 1024)
        #expect(pace.verdict(received: 0, at: start + .seconds(1)) == .onTime)
        #expect(pace.verdict(received: 0, at: start + .milliseconds(2100)) == .tooSlow)
        #expect(pace.verdict(received: 1024, at: start + .seconds(3)) == .onTime)
        #expect(pace.verdict(received: 1023, at: start + .seconds(3)) == .tooSlow)
        #expect(pace.verdict(received: 1 << 30, at: start + .seconds(20)) == .pastDeadline)
        let noFloor = HTTPBodyPace(started: start, deadline: start + .seconds(20), minimumRate: 0)
        #expect(noFloor.verdict(received: 0, at: start + .seconds(19)) == .onTime)
    }

    @Test("headers get half the request deadline, at most 10 s, and the body the rest")
    func allowances() {
        #expect(HTTPBodyPace.headerAllowance(requestDeadline: .seconds(30)) == .seconds(10))
        #expect(HTTPBodyPace.headerAllowance(requestDeadline: .seconds(8)) == .seconds(4))
        #expect(HTTPBodyPace.headerAllowance(requestDeadline: .seconds(2)) == .seconds(1))
        #expect(
            HTTPBodyPace.bodyAllowance(requestDeadline: .seconds(30), headerAllowance: .seconds(10)) == .seconds(20))
    }

    @Test("numeric addresses stand for themselves; localhost resolves to 127.0.0.1; a bad name is an error")
    func listenAddress() throws {
        #expect(try ListenAddress.resolve("127.0.0.1") == ListenAddress(family: .ipv4, numeric: "127.0.0.1"))
        #expect(try ListenAddress.resolve("0.0.0.0") == ListenAddress(family: .ipv4, numeric: "0.0.0.0"))
        #expect(try ListenAddress.resolve("::1") == ListenAddress(family: .ipv6, numeric: "::1"))
        #expect(try ListenAddress.resolve("[::1]") == ListenAddress(family: .ipv6, numeric: "::1"))
        #expect(try ListenAddress.resolve("localhost") == ListenAddress(family: .ipv4, numeric: "127.0.0.1"))
        #expect(ListenAddress(family: .ipv6, numeric: "::1").withPort(80) == "[::1]:80")
        #expect(throws: TransportError.self) { try ListenAddress.resolve("no-such-host.invalid") }
    }
}
