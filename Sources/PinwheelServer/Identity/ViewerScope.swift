import PinwheelCore

/// What a token lets a session see: the points of its tenant (`tenant` claim) that match its filter
/// (`filter` claim). The viewer cannot widen it: it is the scope of the session's ``EffectiveFilter``,
/// which ANDs whatever filter the session asks for with it.
public struct ViewerScope: Equatable, Sendable {
    public var tenant: String?
    public var filter: JSONValue?

    public init(tenant: String? = nil, filter: JSONValue? = nil) {
        self.tenant = tenant
        self.filter = filter
    }

    /// True for a token with neither claim: it sees every point, as an anonymous viewer does.
    public var isUnbounded: Bool { tenant == nil && filter == nil }

    /// The scope as a filter: the tenant as `["==",["get",tenantColumn],tenant]`, ANDed with the
    /// filter claim; nil when unbounded.
    /// - Throws: ``FilterError`` naming the position in the filter claim, `filter[1][0]: …`.
    public func expression(tenantColumn: String) throws(FilterError) -> FilterExpression? {
        let claimed = try filter.map { value throws(FilterError) in try FilterExpression(json: value, path: "filter") }
        let owned = tenant.map { FilterExpression.compare(.equal, .get(tenantColumn), .literal(.string($0))) }
        return FilterExpression.and(owned, claimed)
    }
}
