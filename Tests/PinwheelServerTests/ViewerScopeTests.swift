import PinwheelCore
import Testing

@testable import PinwheelServer

@Suite("Viewer scopes, their filters and producer tokens")
struct ViewerScopeTests {
    private static let table = PropertyTable(
        columns: ["tenant", "kind", "speed"],
        values: [
            .string("acme"), .string("truck"), .number(12), .string("acme"), .string("van"), .number(3),
            .string("globex"), .string("truck"), .number(40), nil, .string("truck"), .number(1),
        ])

    /// The rows of ``table`` a scope keeps.
    private static func kept(_ scope: ViewerScope) throws -> [UInt32] {
        let dataset = Dataset(ids: [1, 2, 3, 4], coordinates: [0, 0, 1, 1, 2, 2, 3, 3], properties: table)
        let filter = try #require(try scope.expression(tenantColumn: "tenant"))
        return dataset.filtered(by: filter).ids
    }

    @Test("a tenant claim becomes an equality on the tenant column, ANDed with the filter claim")
    func expression() throws {
        let filter = try JSONReader.parse(#"["==",["get","kind"],"truck"]"#)
        #expect(try ViewerScope().expression(tenantColumn: "tenant") == nil)
        #expect(ViewerScope().isUnbounded)
        let scope = ViewerScope(tenant: "acme", filter: filter)
        let expected = try FilterExpression(
            json: JSONReader.parse(#"["all",["==",["get","owner"],"acme"],["==",["get","kind"],"truck"]]"#))
        #expect(try scope.expression(tenantColumn: "owner") == expected.canonical)
        // A tenant that reads as a number names a column of numbers too.
        let numbered = try #require(try ViewerScope(tenant: "17").expression(tenantColumn: "t"))
        #expect(numbered == .oneOf(.get("t"), [.number(17), .string("17")]).canonical)
        #expect(ViewerScope.names("17", .number(17)) && ViewerScope.names("17", .string("17")))
        #expect(!ViewerScope.names("acme", nil) && !ViewerScope.names("acme", .string("globex")))
        // The session's effective filter cannot be wider than its scope.
        let effective = EffectiveFilter(scope: try scope.expression(tenantColumn: "owner"), requested: nil)
        #expect(!effective.isEverything)
    }

    @Test("a scope keeps exactly the rows its tenant and filter match; an empty cell is a missing property")
    func matching() throws {
        let filter = try JSONReader.parse(#"["any",["==",["get","speed"],12],["!",["!=",["get","kind"],"van"]]]"#)
        #expect(try Self.kept(ViewerScope(tenant: "acme", filter: filter)) == [1, 2])
        #expect(try Self.kept(ViewerScope(tenant: "globex")) == [3])
        #expect(try Self.kept(ViewerScope(filter: JSONReader.parse(#"["!",["has","tenant"]]"#))) == [4])
    }

    @Test("a filter claim outside the subset is refused naming its position in the claim")
    func positionedErrors() throws {
        let scope = ViewerScope(tenant: "acme", filter: try JSONReader.parse(#"["all",["~",["get","a"],1]]"#))
        #expect(throws: FilterError.self) { try scope.expression(tenantColumn: "tenant") }
        do {
            _ = try scope.expression(tenantColumn: "tenant")
        } catch {
            #expect(error.path == "filter[1][0]")
        }
    }

    @Test("a scope's subset keeps ids, positions, properties and names of the rows it keeps")
    func subset() throws {
        var dataset = Dataset(
            ids: [1, 2, 3, 4], coordinates: [0, 0, 1, 1, 2, 2, 3, 3], properties: Self.table, version: 7)
        dataset.names = [2: "two", 3: "three"]
        let filter = try #require(try ViewerScope(tenant: "acme").expression(tenantColumn: "tenant"))
        let subset = dataset.filtered(by: filter)
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
