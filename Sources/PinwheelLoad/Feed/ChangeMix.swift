import PinwheelCore

/// Changes over a server's existing points in the proportions of a busy live map: 90 % moves of
/// points the server loaded (ids 0 ..< `points`, as `--synthetic` numbers them) to a spot near a
/// city, 5 % new points, 5 % deletes. Seeded.
struct ChangeMix: IteratorProtocol {
    private var random: SplitMix64
    private let points: UInt32
    private var inserted = 0

    init(points: Int, seed: UInt64) {
        random = SplitMix64(seed: seed)
        self.points = UInt32(max(1, min(points, Int(PointKey.maxNumber))))
    }

    mutating func next() -> Change? {
        let roll = random.nextUnit()
        if roll < 0.05 {
            return .delete(.number(UInt32(random.next() % UInt64(points))))
        }
        let city = TourCities.all[Int(random.next() % UInt64(TourCities.all.count))]
        let lat = min(85, max(-85, city.lat + (random.nextUnit() - 0.5) * 4))
        let lon = min(180, max(-180, city.lon + (random.nextUnit() - 0.5) * 4))
        if roll < 0.10 {
            inserted += 1
            return .upsert(.name("load-\(inserted)"), lat: lat, lon: lon, properties: [:])
        }
        return .upsert(.number(UInt32(random.next() % UInt64(points))), lat: lat, lon: lon, properties: [:])
    }
}
