extension Coordinate {
    /// This position as a `pinwheel.v1` (JSON) session receives it: each axis to 7 decimals, rounded
    /// as the `held` digest rounds it.
    public var writtenAsJSON: Coordinate {
        Coordinate(
            lat: Double(BinaryGrid.fixed(lat, unit: 1, limit: BinaryGrid.latLimit)) / 1e7,
            lon: Double(BinaryGrid.fixed(lon, unit: 1, limit: BinaryGrid.lonLimit)) / 1e7)
    }
}

extension WireFeature {
    /// This feature as a `pinwheel.v1` (JSON) session receives it: its position and anchor to 7 decimals.
    public var writtenAsJSON: WireFeature {
        var f = self
        let position = Coordinate(lat: lat, lon: lon).writtenAsJSON
        f.lat = position.lat
        f.lon = position.lon
        f.anchor = anchor?.writtenAsJSON
        return f
    }
}
