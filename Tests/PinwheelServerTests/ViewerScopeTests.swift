import PinwheelCore
import Testing

@testable import PinwheelServer

@Suite("Viewer scopes, their filters and producer tokens")
struct ViewerScopeTests {
    private static let table = PropertyTable(
        columns: ["tenant", "kind", "speed"],
        values: ["acme", "truck", "12", "acme", "van", "3", "globex", "truck", "40", "", "truck", "1"])

    @Test("a tenant claim becomes an equality on the tenant column, ANDed with the filter claim")
    func expression() throws {
        let filter = JSONValue.array([.string("=="), .array([.string("get"), .string("kind")]), .string("truck")])
        #expect(ViewerScope().expression(tenantColumn: "tenant") == nil)
        #expect(ViewerScope().isUnbounded)
        let scope = ViewerScope(tenant: "acme", filter: filter)
        let parsed = try ScopeFilter.parse(#require(scope.expression(tenantColumn: "owner")))
        #expect(
            parsed
                == .all([
                    .equal(column: "owner", value: .string("acme")), .equal(column: "kind", value: .string("truck")),
                ])
        )
    }

    @Test("a scope keeps exactly the rows its expression matches")
    func matching() throws {
        let json = try JSONReader.parse(
            #"["all",["==",["get","tenant"],"acme"],["any",["==",["get","speed"],12],["!",["!=",["get","kind"],"van"]]]]"#
        )
        let filter = try ScopeFilter.parse(json)
        let kept = (0..<4).filter { filter.matches(row: $0, in: Self.table) }
        #expect(kept == [0, 1])
        let noTenant = try ScopeFilter.parse(JSONReader.parse(#"["==",["get","tenant"],""]"#))
        #expect((0..<4).filter { noTenant.matches(row: $0, in: Self.table) } == [3])
        #expect(filter.matches(["tenant": "acme", "speed": "12"]))
        #expect(!filter.matches(["tenant": "globex", "speed": "12"]))
    }

    @Test("an expression outside the subset is refused naming its position")
    func positionedErrors() throws {
        let cases: [(String, String)] = [
            (#"["all",["~",["get","a"],1]]"#, #"filter[1][0]: unknown operator "~" (==, !=, all, any, !)"#),
            (#"["==","a",1]"#, #"filter[1]: expected ["get", <property>]"#),
            (#"["any",["==",["get","a"],[1]]]"#, "filter[1][2]: expected a string, number or boolean"),
            (#"{"tenant":"a"}"#, "filter: expected an array starting with an operator, got an object"),
        ]
        for (text, message) in cases {
            #expect(throws: IdentityError.invalidFilter(message)) { try ScopeFilter.parse(JSONReader.parse(text)) }
        }
    }

    @Test("a scope's subset keeps ids, positions, properties and names of the rows it keeps")
    func subset() throws {
        var dataset = Dataset(
            ids: [1, 2, 3, 4], coordinates: [0, 0, 1, 1, 2, 2, 3, 3], properties: Self.table, version: 7)
        dataset.names = [2: "two", 3: "three"]
        let filter = try ScopeFilter.parse(JSONReader.parse(#"["==",["get","tenant"],"acme"]"#))
        let subset = ScopedClusterers.subset(of: dataset, keeping: filter)
        #expect(subset.ids == [1, 2])
        #expect(subset.coordinates == [0, 0, 1, 1])
        #expect(subset.properties.values == Array(Self.table.values[0..<6]))
        #expect(subset.names == [2: "two"])
        #expect(subset.version == 7)
    }

    @Test("producer token files: TOKEN TENANT lines, comments, and errors naming the line")
    func producerTokens() throws {
        let tokens = try ProducerTokens.parse(
            "# producers\nacme-token-0123456789 acme\n\nglobex-token-012345\tglobex\n", path: "p")
        #expect(tokens == ["acme-token-0123456789": "acme", "globex-token-012345": "globex"])
        #expect(
            throws: IdentityError.unreadableProducerTokens(
                path: "p", line: 2, reason: "expected 'TOKEN TENANT', got 1 fields")
        ) {
            try ProducerTokens.parse("acme-token-0123456789 acme\nlonely-token-0123456789\n", path: "p")
        }
        #expect(throws: IdentityError.unreadableProducerTokens(path: "p", line: 0, reason: "no tokens")) {
            try ProducerTokens.parse("# nothing\n", path: "p")
        }
    }

    @Test("a key file's kind is told from its contents")
    func keyKinds() {
        #expect(ViewerKeys.detectKind(#"{"keys":[]}"#) == .jwks)
        #expect(ViewerKeys.detectKind("a-secret-of-enough-bytes-0123456789") == .hs256)
        #expect(ViewerKeys.detectKind("-----BEGIN PUBLIC KEY-----\nbm90\n-----END PUBLIC KEY-----\n") == .rs256)
    }

    @Test("an auth message is read only when it is one")
    func authMessage() {
        #expect(AuthMessage.read(Array(#"{"type":"auth","token":"a.b.c"}"#.utf8)) == .token("a.b.c"))
        #expect(AuthMessage.read(Array(#"{"type":"viewport","seq":1}"#.utf8)) == .notAuth)
        #expect(AuthMessage.read(Array(#"{"type":"settings","note":"auth"}"#.utf8)) == .notAuth)
        if case .invalid = AuthMessage.read(Array(#"{"type":"auth"}"#.utf8)) {
        } else {
            Issue.record("expected invalid")
        }
    }
}
