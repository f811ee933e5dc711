import Foundation
import PinwheelCore

/// The filters of a filtered load run (`--filters`), over the columns `serve --synthetic-tenants`
/// gives its points: `tenant` (t0 … t{T-1}, equally common) and `speed` (0 … 99.9, uniform).
///
/// Filter i of N selects about p = 1 % × 50^(i/(N-1)) of the points (1 % to 50 %, spread evenly on a
/// log scale): ⌈p·T⌉ tenants from the i-th on, and of their points those slower than the speed that
/// leaves p. Without tenants, the speed alone. Each filter has its own canonical key, so N filters
/// are N shared indexes on the server.
public struct LoadFilters: Sendable {
    /// One filter and the share of the points it is built to select.
    public struct Filter: Sendable {
        public var expression: FilterExpression
        public var share: Double
        /// Bound once to the property names point features carry, for the check on every batch.
        let bound: BoundFilter
    }

    /// The property names the filters read.
    static let columns = ["tenant", "speed"]

    public let filters: [Filter]

    /// - Parameters:
    ///   - count: distinct filters.
    ///   - tenants: tenants the points are spread over; 0 for points without a tenant column.
    public init(count: Int, tenants: Int) {
        var made: [Filter] = []
        var keys = Set<String>()
        for i in 0..<count {
            let target = 0.01 * pow(50, count > 1 ? Double(i) / Double(count - 1) : 0)
            var f = Self.make(share: target, first: i, tenants: tenants)
            // Two targets close enough to round to one filter: the next tenths of speed apart.
            var nudge = 0.1
            while keys.contains(f.expression.key) {
                f = Self.make(share: target, first: i, tenants: tenants, extraSpeed: nudge)
                nudge += 0.1
            }
            keys.insert(f.expression.key)
            made.append(f)
        }
        filters = made
    }

    /// The `k`-th never-seen filter of the probe: speeds in [a, a + 10), about 10 % of the points, for a
    /// different `a` each time (a shape no filter of ``init(count:tenants:)`` has).
    public static func probe(_ k: Int) -> Filter {
        let from = Double((k * 37) % 900) / 10
        let expression = FilterExpression.all([
            .compare(.greaterOrEqual, .get("speed"), .literal(.number(from))),
            .compare(.less, .get("speed"), .literal(.number(from + 10))),
        ])
        return Filter(expression: expression, share: 0.1, bound: BoundFilter(expression, columns: columns))
    }

    private static func make(share: Double, first: Int, tenants: Int, extraSpeed: Double = 0) -> Filter {
        var parts: [FilterExpression] = []
        var speedShare = share
        if tenants > 0 {
            let picked = min(tenants, max(1, Int((share * Double(tenants)).rounded(.up))))
            let names = (0..<picked).map { PropertyValue.string("t\((first + $0) % tenants)") }
            parts.append(.oneOf(.get("tenant"), names))
            speedShare = min(1, share * Double(tenants) / Double(picked))
        }
        // Speeds are tenths: a bound in tenths selects exactly its share of them.
        let limit = min(100, (speedShare * 1000).rounded() / 10 + extraSpeed)
        if limit < 100 { parts.append(.compare(.less, .get("speed"), .literal(.number(limit)))) }
        let expression = parts.count == 1 ? parts[0] : FilterExpression.all(parts)
        return Filter(expression: expression, share: share, bound: BoundFilter(expression, columns: columns))
    }
}
