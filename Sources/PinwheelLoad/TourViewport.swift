import Foundation
import PinwheelCore

/// One viewport a tourist reports, shaped like the protocol's `viewport` message.
public struct TourViewport: Equatable, Sendable {
    /// West, south, east, north in degrees; west > east crosses the antimeridian.
    public var bbox: BBox
    /// Map zoom, fractional allowed.
    public var zoom: Double
    /// Map size in pixels.
    public var width: Int
    public var height: Int

    /// The viewport a map of `width` × `height` pixels shows around a centre.
    /// - Parameters:
    ///   - x: centre in Mercator units [0, 1), growing east.
    ///   - y: centre in Mercator units [0, 1], growing south.
    ///   - zoom: Leaflet zoom (256-pixel tiles).
    public init(x: Double, y: Double, zoom: Double, width: Int, height: Int) {
        let worldPixels = 256 * pow(2, zoom)
        let halfWidth = Double(width) / 2 / worldPixels
        let halfHeight = Double(height) / 2 / worldPixels
        let north = Mercator.lat(y: max(0, y - halfHeight))
        let south = Mercator.lat(y: min(1, y + halfHeight))
        // A map wider than the world shows every longitude; otherwise the edges wrap, and an edge past
        // ±180° makes west > east, as a browser crossing the antimeridian reports it.
        let bbox =
            2 * halfWidth >= 1
            ? BBox(west: -180, south: south, east: 180, north: north)
            : BBox(
                west: BBox.wrap(Mercator.lon(x: x - halfWidth)), south: south,
                east: BBox.wrap(Mercator.lon(x: x + halfWidth)), north: north)
        self.bbox = bbox
        self.zoom = zoom
        self.width = width
        self.height = height
    }

    /// The `viewport` message for this view with sequence number `seq`.
    public func message(seq: Int) -> ClientMessage {
        let box = BBox(
            west: Self.rounded(bbox.west), south: Self.rounded(bbox.south), east: Self.rounded(bbox.east),
            north: Self.rounded(bbox.north))
        return .viewport(
            ViewportMessage(seq: UInt64(seq), bbox: box, zoom: Self.rounded(zoom), width: width, height: height))
    }

    // Six decimals (~0.1 m) keep messages short, as a page rounding its map bounds would.
    private static func rounded(_ value: Double) -> Double {
        (value * 1_000_000).rounded() / 1_000_000
    }
}
