/// A position on the WGS84 sphere in decimal degrees.
public struct Coordinate: Hashable, Sendable {
    /// Degrees north, -90...90.
    public var lat: Double
    /// Degrees east, -180...180.
    public var lon: Double

    public init(lat: Double, lon: Double) {
        self.lat = lat
        self.lon = lon
    }
}
