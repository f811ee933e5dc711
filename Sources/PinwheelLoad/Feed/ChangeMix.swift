import PinwheelCore

/// Changes over a server's existing points in the proportions of a busy live map: 90 % moves of
/// points the server loaded (ids 0 ..< `points`, as `--synthetic` numbers them) to a spot near a
/// city, 5 % new points, 5 % deletes. Seeded. Over points with tenants (`serve --synthetic-tenants`)
/// a moved point keeps the `tenant` and `speed` it was generated with, and a new one gets its own, so
/// filtered views keep their points and take in new ones.
struct ChangeMix: IteratorProtocol {
    private var random: SplitMix64
    private let points: UInt32
    private var inserted = 0
    /// The server's generator (`serve --synthetic` uses the default seed), when its points have tenants.
    private let fleet: SyntheticGenerator?

    init(points: Int, seed: UInt64, tenants: Int = 0) {
        random = SplitMix64(seed: seed)
        self.points = UInt32(max(1, min(points, Int(PointKey.maxNumber))))
        if tenants > 0 {
            var generator = SyntheticGenerator()
            generator.tenants = tenants
            fleet = generator
        } else {
            fleet = nil
        }
    }

    /// The properties point `id` is upserted with.
    private func properties(_ id: UInt32) -> [String: PropertyValue] {
        guard let fleet else { return [:] }
        let (tenant, speed) = fleet.fleetProperties(id: id)
        return ["tenant": .string(tenant), "speed": .number(speed)]
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
            // A new point's fleet columns drawn as an id past the loaded ones would have them.
            return .upsert(
                .name("load-\(inserted)"), lat: lat, lon: lon,
                properties: properties(points &+ UInt32(truncatingIfNeeded: inserted)))
        }
        let id = UInt32(random.next() % UInt64(points))
        return .upsert(.number(id), lat: lat, lon: lon, properties: properties(id))
    }
}
