/// Where a refresh's changes happened (each changed point's old and new place, mercator), so a
/// server refreshes only the sessions whose view they can alter.
public struct ChangeFootprint: Sendable {
    /// Mercator x at 2i, y at 2i + 1.
    public private(set) var xy: [Double] = []

    public init() {}

    public var isEmpty: Bool { xy.isEmpty }

    /// Adds a place a point left or reached.
    public mutating func add(x: Double, y: Double) {
        xy.append(x)
        xy.append(y)
    }

    /// True when a change lies in the view or near enough to move a cluster shown in it: a cluster's
    /// points lie within about two of its zoom's radii of its centroid.
    /// - Parameters:
    ///   - bbox: the view.
    ///   - zoom: its zoom in the index's levels (``ViewportMessage/indexZoom``).
    ///   - options: the clustering options (radius, extent).
    public func touches(_ bbox: BBox, zoom: Double, options: ClusterOptions) -> Bool {
        let z = zoom.isFinite ? Int(max(0, min(zoom.rounded(.down), Double(ClusterOptions.zoomLimit)))) : 0
        let margin = 2 * options.radius(atZoom: z)
        let minY = Mercator.y(lat: bbox.north) - margin
        let maxY = Mercator.y(lat: bbox.south) + margin
        let west = Mercator.x(lon: bbox.west) - margin
        let east = Mercator.x(lon: bbox.east) + margin
        return xy.withUnsafeBufferPointer { p in
            for i in stride(from: 0, to: p.count, by: 2) where p[i + 1] >= minY && p[i + 1] <= maxY {
                let x = p[i]
                // Across the antimeridian the view is the two ends of the world.
                let inside = bbox.crossesAntimeridian ? (x >= west || x <= east) : (x >= west && x <= east)
                if inside { return true }
            }
            return false
        }
    }
}
