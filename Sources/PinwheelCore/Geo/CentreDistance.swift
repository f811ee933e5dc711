/// Squared distance from a viewport's centre in Web Mercator units, the short way round the
/// antimeridian: the order in which batches bring features, and which features a capped viewport keeps.
public struct CentreDistance: Sendable {
    private let cx: Double
    private let cy: Double

    public init(_ centre: Coordinate) {
        cx = Mercator.x(lon: centre.lon)
        cy = Mercator.y(lat: centre.lat)
    }

    @inlinable public func callAsFunction(lat: Double, lon: Double) -> Double {
        squared(x: Mercator.x(lon: lon), y: Mercator.y(lat: lat))
    }

    @usableFromInline func squared(x: Double, y: Double) -> Double {
        var dx = abs(x - cx)
        if dx > 0.5 { dx = 1 - dx }
        let dy = y - cy
        return dx * dx + dy * dy
    }
}
