import Foundation

/// Great-circle geometry on a sphere.
public enum Sphere {
    /// The Earth radius of the published spreading design, in metres.
    public static let radius = 6_378_100.0

    /// The point reached by travelling `distance` metres from `start` on initial bearing `bearing`.
    /// - Parameters:
    ///   - start: where to start.
    ///   - bearing: radians clockwise from north.
    ///   - distance: metres along the great circle.
    /// - Returns: the destination, longitude wrapped into -180...180.
    public static func destination(from start: Coordinate, bearing: Double, distance: Double) -> Coordinate {
        let delta = distance / radius
        let phi1 = start.lat * .pi / 180
        let lambda1 = start.lon * .pi / 180
        let sinPhi2 = sin(phi1) * cos(delta) + cos(phi1) * sin(delta) * cos(bearing)
        let phi2 = asin(min(1, max(-1, sinPhi2)))
        let lambda2 = lambda1 + atan2(sin(bearing) * sin(delta) * cos(phi1), cos(delta) - sin(phi1) * sinPhi2)
        return Coordinate(lat: phi2 * 180 / .pi, lon: BBox.wrap(lambda2 * 180 / .pi))
    }
}
