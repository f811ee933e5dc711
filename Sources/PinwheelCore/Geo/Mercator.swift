import Foundation

/// Web Mercator on the unit square: x grows east from 0 at -180°, y grows south from 0 at +85.0511°.
public enum Mercator {
    /// The latitude at which Web Mercator becomes a square, in degrees.
    public static let maxLatitude = 85.051_128_779_806_59
    /// Equatorial radius used by Web Mercator scale (WGS84), in metres.
    public static let earthRadius = 6_378_137.0

    /// x in [0, 1] for a longitude in degrees.
    @inlinable public static func x(lon: Double) -> Double {
        lon / 360 + 0.5
    }

    /// y in [0, 1] for a latitude in degrees, clamped to ±``maxLatitude``.
    @inlinable public static func y(lat: Double) -> Double {
        let clamped = min(max(lat, -maxLatitude), maxLatitude)
        let s = sin(clamped * .pi / 180)
        let y = 0.5 - 0.25 * log((1 + s) / (1 - s)) / .pi
        return min(max(y, 0), 1)
    }

    /// Longitude in degrees for x in [0, 1].
    @inlinable public static func lon(x: Double) -> Double {
        (x - 0.5) * 360
    }

    /// Latitude in degrees for y in [0, 1].
    @inlinable public static func lat(y: Double) -> Double {
        let y2 = (180 - y * 360) * .pi / 180
        return 360 * atan(exp(y2)) / .pi - 90
    }

    /// Ground distance covered by one screen pixel.
    /// - Parameters:
    ///   - lat: latitude in degrees.
    ///   - zoom: map zoom, fractional allowed.
    ///   - tileSize: pixels per tile edge (Leaflet uses 256).
    /// - Returns: metres per pixel.
    public static func metresPerPixel(lat: Double, zoom: Double, tileSize: Double = 256) -> Double {
        let clamped = min(max(lat, -maxLatitude), maxLatitude)
        return 2 * .pi * earthRadius * cos(clamped * .pi / 180) / (tileSize * pow(2, zoom))
    }
}
