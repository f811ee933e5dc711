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

    /// The scope as a filter: the tenant as `["==",["get",tenantColumn],tenant]` (or its number, for
    /// a column of numbers), ANDed with the filter claim; nil when unbounded.
    /// - Throws: ``FilterError`` naming the position in the filter claim, `filter[1][0]: …`.
    public func expression(tenantColumn: String) throws(FilterError) -> FilterExpression? {
        let claimed = try filter.map { value throws(FilterError) in try FilterExpression(json: value, path: "filter") }
        let owned = tenant.map { tenant in
            FilterExpression.oneOf(.get(tenantColumn), Self.values(naming: tenant)).canonical
        }
        return FilterExpression.and(owned, claimed)
    }

    /// The property values a tenant claim names: the string, and the number it reads as when the
    /// column holds numbers (a CSV column of tenant numbers is typed as numbers).
    static func values(naming tenant: String) -> [PropertyValue] {
        guard let number = Double(tenant), number.isFinite else { return [.string(tenant)] }
        return [.string(tenant), .number(number)]
    }

    /// Whether a point's tenant property names `tenant`.
    static func names(_ tenant: String, _ value: PropertyValue?) -> Bool {
        guard let value else { return false }
        return values(naming: tenant).contains { $0.strictlyEquals(value) }
    }
}
