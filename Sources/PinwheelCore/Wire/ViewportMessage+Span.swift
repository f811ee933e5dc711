import Foundation

extension ViewportMessage {
    /// Tile size of the maps Pinwheel serves (Leaflet's): the world is `tileSize × 2^zoom` pixels wide.
    public static let tileSize = 256.0
    /// How much larger than its map a viewport's bbox may be, in each direction: twice the map plus
    /// one tile. Browsers report bounds of the map as drawn (padding, fractional zoom and rounding
    /// stay far inside this); a bbox beyond it asks for work no screen can show.
    public static let spanSlack = 2.0
    public static let spanMarginPixels = 256.0

    /// What is wrong with this viewport's bbox given its size and zoom ("spans …", to follow "bbox "),
    /// or nil when a map of `width` × `height` pixels at `zoom` can show it.
    public var spanProblem: String? {
        let worldPixels = Self.tileSize * pow(2, zoom)
        func allowed(_ pixels: Int) -> Double {
            min(1, (Double(pixels) * Self.spanSlack + Self.spanMarginPixels) / worldPixels)
        }
        let lonSpan = bbox.crossesAntimeridian ? bbox.east + 360 - bbox.west : bbox.east - bbox.west
        let ySpan = Mercator.y(lat: bbox.south) - Mercator.y(lat: bbox.north)
        // Three decimals are enough to explain the refusal.
        func text(_ d: Double) -> String { MessageFields.format((d * 1000).rounded() / 1000) }
        if lonSpan / 360 > allowed(width) {
            return "spans \(text(lonSpan))° of longitude; a \(width)-px-wide map at zoom \(text(zoom)) "
                + "shows at most \(text(allowed(width) * 360))° (its width twice over plus 256 px)"
        }
        if ySpan > allowed(height) {
            return "spans latitudes \(text(bbox.south))° to \(text(bbox.north))°, more than a "
                + "\(height)-px-high map at zoom \(text(zoom)) shows (its height twice over plus 256 px)"
        }
        return nil
    }
}
