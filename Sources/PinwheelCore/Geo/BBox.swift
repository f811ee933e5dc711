/// A longitude/latitude box in degrees. `west > east` means the box crosses the antimeridian.
public struct BBox: Hashable, Sendable {
    public var west: Double
    public var south: Double
    public var east: Double
    public var north: Double

    public static let world = BBox(west: -180, south: -90, east: 180, north: 90)

    public init(west: Double, south: Double, east: Double, north: Double) {
        self.west = west
        self.south = south
        self.east = east
        self.north = north
    }

    /// A box from a client's raw numbers: longitudes wrapped into -180...180 (a span of 360° or more
    /// becomes the whole world), latitudes clamped and ordered.
    public static func normalized(west: Double, south: Double, east: Double, north: Double) -> BBox {
        let s = max(-90, min(south, north))
        let n = min(90, max(south, north))
        if east - west >= 360 {
            return BBox(west: -180, south: s, east: 180, north: n)
        }
        let w = wrap(west)
        var e = wrap(east)
        // A map wrapped exactly once can report east = 180 as -180.
        if e == -180 && east > west { e = 180 }
        return BBox(west: w, south: s, east: e, north: n)
    }

    /// True when the box crosses the antimeridian.
    public var crossesAntimeridian: Bool { west > east }

    /// The box's centre; on an antimeridian box the longitude is wrapped back into -180...180.
    public var center: Coordinate {
        let width = crossesAntimeridian ? east + 360 - west : east - west
        return Coordinate(lat: (south + north) / 2, lon: BBox.wrap(west + width / 2))
    }

    /// Whether a point lies inside, edges included.
    public func contains(lat: Double, lon: Double) -> Bool {
        guard lat >= south && lat <= north else { return false }
        return crossesAntimeridian ? (lon >= west || lon <= east) : (lon >= west && lon <= east)
    }

    /// The box as one or two rectangles in Mercator unit space (minX, minY, maxX, maxY); two when it
    /// crosses the antimeridian.
    /// - Returns: the count written into `into` (1 or 2).
    public func mercatorRects(into rects: inout [MercatorRect]) -> Int {
        rects.removeAll(keepingCapacity: true)
        let minY = Mercator.y(lat: north)
        let maxY = Mercator.y(lat: south)
        if crossesAntimeridian {
            rects.append(MercatorRect(minX: Mercator.x(lon: west), minY: minY, maxX: 1, maxY: maxY))
            rects.append(MercatorRect(minX: 0, minY: minY, maxX: Mercator.x(lon: east), maxY: maxY))
        } else {
            rects.append(MercatorRect(spanning: self))
        }
        return rects.count
    }

    /// Wraps a longitude into -180...180 (180 stays 180).
    public static func wrap(_ lon: Double) -> Double {
        if lon >= -180 && lon <= 180 { return lon }
        let r = (lon + 180).truncatingRemainder(dividingBy: 360)
        return (r < 0 ? r + 360 : r) - 180
    }
}

/// An axis-aligned rectangle in Mercator unit space, y growing south.
public struct MercatorRect: Hashable, Sendable {
    public var minX: Double
    public var minY: Double
    public var maxX: Double
    public var maxY: Double

    public init(minX: Double, minY: Double, maxX: Double, maxY: Double) {
        self.minX = minX
        self.minY = minY
        self.maxX = maxX
        self.maxY = maxY
    }

    /// A box that does not cross the antimeridian.
    public init(spanning box: BBox) {
        self.init(
            minX: Mercator.x(lon: box.west), minY: Mercator.y(lat: box.north), maxX: Mercator.x(lon: box.east),
            maxY: Mercator.y(lat: box.south))
    }

    @inlinable public func contains(x: Double, y: Double) -> Bool {
        x >= minX && x <= maxX && y >= minY && y <= maxY
    }
}
