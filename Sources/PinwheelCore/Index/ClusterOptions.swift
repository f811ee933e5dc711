import Foundation

/// Options of the hierarchical cluster index, named as in supercluster so they read the same.
/// Supercluster's `nodeSize` (points per k-d tree leaf) has no counterpart: each zoom is kept in
/// grid-cell order, not in a k-d tree, so there is nothing for it to tune.
public struct ClusterOptions: Hashable, Sendable {
    /// Coarsest zoom that is clustered (default 0).
    public var minZoom: Int
    /// Finest zoom that is clustered (default 16); above it every point is shown on its own.
    public var maxZoom: Int
    /// Fewest points that form a cluster (default 2).
    public var minPoints: Int
    /// Cluster radius in pixels of a tile `extent` pixels wide (default 40).
    public var radius: Double
    /// Tile width in pixels that `radius` is measured against (default 512).
    public var extent: Double
    /// How same-coordinate groups are laid out (default adaptive).
    public var spread: SpreadMode
    /// Minimum pixels between spread pins in adaptive mode, at 256-pixel tiles (default 28).
    public var spreadSpacing: Double
    /// Metres within which points count as one coordinate; 0 (default) means exactly equal.
    public var sameCoordinateToleranceMetres: Double
    /// Most features one viewport shows with the `pca-tree` algorithm (default 32); the hierarchical
    /// index ignores it.
    public var maxClusters: Int

    public init(
        minZoom: Int = 0, maxZoom: Int = 16, minPoints: Int = 2, radius: Double = 40, extent: Double = 512,
        spread: SpreadMode = .adaptive, spreadSpacing: Double = SpreadPlacement.defaultSpacing,
        sameCoordinateToleranceMetres: Double = 0, maxClusters: Int = 32
    ) {
        self.minZoom = minZoom
        self.maxZoom = maxZoom
        self.minPoints = minPoints
        self.radius = radius
        self.extent = extent
        self.spread = spread
        self.spreadSpacing = spreadSpacing
        self.sameCoordinateToleranceMetres = sameCoordinateToleranceMetres
        self.maxClusters = maxClusters
    }

    /// Largest accepted `maxClusters`.
    public static let maxClustersLimit = 4_096

    /// Finest zoom the index accepts as `maxZoom`.
    public static let zoomLimit = 24

    /// Checks every option.
    /// - Throws: ``IndexError/invalidOption(name:value:expected:)`` naming the first bad option.
    public func validate() throws(IndexError) {
        func fail(_ name: String, _ value: Any, _ expected: String) -> IndexError {
            .invalidOption(name: name, value: "\(value)", expected: expected)
        }
        guard minZoom >= 0 && minZoom <= ClusterOptions.zoomLimit else {
            throw fail("minZoom", minZoom, "0...\(ClusterOptions.zoomLimit)")
        }
        guard maxZoom >= minZoom && maxZoom <= ClusterOptions.zoomLimit else {
            throw fail("maxZoom", maxZoom, "minZoom (\(minZoom))...\(ClusterOptions.zoomLimit)")
        }
        guard minPoints >= 2 && minPoints <= 1_000_000 else { throw fail("minPoints", minPoints, "2...1000000") }
        guard radius.isFinite && radius > 0 else { throw fail("radius", radius, "a positive number of pixels") }
        guard extent.isFinite && extent >= radius else { throw fail("extent", extent, "at least radius (\(radius))") }
        guard spreadSpacing.isFinite && spreadSpacing > 0 && spreadSpacing <= 1_000 else {
            throw fail("spreadSpacing", spreadSpacing, "a number of pixels in (0, 1000]")
        }
        guard
            sameCoordinateToleranceMetres >= 0
                && sameCoordinateToleranceMetres <= SameCoordinateGroups.maxToleranceMetres
        else {
            throw fail(
                "sameCoordinateToleranceMetres", sameCoordinateToleranceMetres,
                "0...\(SameCoordinateGroups.maxToleranceMetres) metres")
        }
        guard maxClusters >= 1 && maxClusters <= ClusterOptions.maxClustersLimit else {
            throw fail("maxClusters", maxClusters, "1...\(ClusterOptions.maxClustersLimit)")
        }
    }

    /// Cluster radius at a zoom in mercator units (the world is 1 wide).
    func radius(atZoom z: Int) -> Double {
        radius / (extent * pow(2, Double(z)))
    }

    /// Bits per axis of the grid whose cells are the smallest power-of-two fraction of the world at
    /// least as wide as the cluster radius at zoom `z`, so a point's neighbours lie in the 3×3 cells
    /// around it. Zero when one cell is the whole world.
    func gridBits(clusteringZoom z: Int) -> Int {
        let r = radius(atZoom: z)
        var bits = 0
        while bits < 30 && 1 / Double(1 << (bits + 1)) >= r { bits += 1 }
        return bits
    }
}
