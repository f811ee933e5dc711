import PinwheelCore

/// Cities a tourist jumps between: a spread over every inhabited continent, so any dataset's bounds
/// hold a few of them.
enum TourCities {
    static let all: [Coordinate] = [
        Coordinate(lat: 51.507, lon: -0.128),  // London
        Coordinate(lat: 48.857, lon: 2.352),  // Paris
        Coordinate(lat: 52.520, lon: 13.405),  // Berlin
        Coordinate(lat: 41.903, lon: 12.496),  // Rome
        Coordinate(lat: 40.417, lon: -3.704),  // Madrid
        Coordinate(lat: 59.329, lon: 18.069),  // Stockholm
        Coordinate(lat: 55.756, lon: 37.617),  // Moscow
        Coordinate(lat: 41.008, lon: 28.978),  // Istanbul
        Coordinate(lat: 30.044, lon: 31.236),  // Cairo
        Coordinate(lat: 6.524, lon: 3.379),  // Lagos
        Coordinate(lat: -1.292, lon: 36.822),  // Nairobi
        Coordinate(lat: -33.925, lon: 18.424),  // Cape Town
        Coordinate(lat: 25.205, lon: 55.271),  // Dubai
        Coordinate(lat: 19.076, lon: 72.878),  // Mumbai
        Coordinate(lat: 28.614, lon: 77.209),  // Delhi
        Coordinate(lat: 13.756, lon: 100.502),  // Bangkok
        Coordinate(lat: 1.352, lon: 103.820),  // Singapore
        Coordinate(lat: 39.904, lon: 116.407),  // Beijing
        Coordinate(lat: 31.230, lon: 121.474),  // Shanghai
        Coordinate(lat: 35.690, lon: 139.692),  // Tokyo
        Coordinate(lat: 37.567, lon: 126.978),  // Seoul
        Coordinate(lat: -33.869, lon: 151.209),  // Sydney
        Coordinate(lat: -36.849, lon: 174.763),  // Auckland
        Coordinate(lat: 21.307, lon: -157.858),  // Honolulu
        Coordinate(lat: 61.218, lon: -149.900),  // Anchorage
        Coordinate(lat: 37.775, lon: -122.419),  // San Francisco
        Coordinate(lat: 34.052, lon: -118.244),  // Los Angeles
        Coordinate(lat: 41.878, lon: -87.630),  // Chicago
        Coordinate(lat: 40.713, lon: -74.006),  // New York
        Coordinate(lat: 19.433, lon: -99.133),  // Mexico City
        Coordinate(lat: 4.711, lon: -74.072),  // Bogotá
        Coordinate(lat: -12.046, lon: -77.043),  // Lima
        Coordinate(lat: -23.551, lon: -46.633),  // São Paulo
        Coordinate(lat: -34.604, lon: -58.382),  // Buenos Aires
    ]

    /// The cities inside `bounds`; when none is, nine points spread over the bounds instead.
    static func within(_ bounds: BBox) -> [Coordinate] {
        let inside = all.filter { bounds.contains(lat: $0.lat, lon: $0.lon) }
        if !inside.isEmpty { return inside }
        let width = bounds.crossesAntimeridian ? bounds.east + 360 - bounds.west : bounds.east - bounds.west
        var grid: [Coordinate] = []
        for i in 1...3 {
            for j in 1...3 {
                grid.append(
                    Coordinate(
                        lat: bounds.south + (bounds.north - bounds.south) * Double(i) / 4,
                        lon: BBox.wrap(bounds.west + width * Double(j) / 4)))
            }
        }
        return grid
    }
}
