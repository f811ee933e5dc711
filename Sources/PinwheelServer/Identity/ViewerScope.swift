import PinwheelCore

/// What a token lets a session see: the points of its tenant (`tenant` claim) that match its filter
/// (`filter` claim). The viewer cannot widen it: whatever filter the session asks for is ANDed with it.
public struct ViewerScope: Equatable, Sendable {
    public var tenant: String?
    public var filter: JSONValue?

    public init(tenant: String? = nil, filter: JSONValue? = nil) {
        self.tenant = tenant
        self.filter = filter
    }

    /// True for a token with neither claim: it sees every point, as an anonymous viewer does.
    public var isUnbounded: Bool { tenant == nil && filter == nil }

    /// The scope as one filter expression in the style-spec syntax: the tenant as
    /// `["==",["get",tenantColumn],tenant]`, ANDed with the filter claim; nil when unbounded.
    public func expression(tenantColumn: String) -> JSONValue? {
        var terms: [JSONValue] = []
        if let tenant {
            terms.append(.array([.string("=="), .array([.string("get"), .string(tenantColumn)]), .string(tenant)]))
        }
        if let filter { terms.append(filter) }
        switch terms.count {
        case 0: return nil
        case 1: return terms[0]
        default: return .array([.string("all")] + terms)
        }
    }
}
