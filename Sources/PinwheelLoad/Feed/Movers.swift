import PinwheelCore

/// Simulated vehicles driving between cities, as a producer of live changes would report them: each
/// change moves one vehicle a step along its road; now and then a vehicle is withdrawn and a new one
/// appears in another city. Seeded, so equal seeds give equal changes.
public struct Movers: Sendable {
    private struct Vehicle: Sendable {
        var name: String
        var from: Coordinate
        var to: Coordinate
        /// 0 at `from`, 1 at `to`.
        var progress: Double
        /// Progress per step.
        var speed: Double
    }

    /// Share of changes that replace a vehicle (half a delete, half an insert of a new one).
    public static let turnover = 0.1

    private var random: SplitMix64
    private var vehicles: [Vehicle] = []
    private var nextNumber = 0
    private var cursor = 0
    /// The vehicle withdrawn by the last change, replaced by the next.
    private var withdrawn: Int?

    /// - Parameters:
    ///   - count: vehicles on the road at any time.
    ///   - seed: equal seeds give equal changes.
    public init(count: Int, seed: UInt64 = 1) {
        random = SplitMix64(seed: seed)
        for _ in 0..<max(1, count) { vehicles.append(makeVehicle()) }
    }

    /// Every vehicle where it starts, to create them on the server.
    public func placements() -> [Change] {
        vehicles.map { upsert($0) }
    }

    /// The next change: a step (90 %), a withdrawal (5 %) or an arrival (5 %).
    public mutating func next() -> Change {
        if let k = withdrawn {
            withdrawn = nil
            vehicles[k] = makeVehicle()
            return upsert(vehicles[k])
        }
        if random.nextUnit() < Movers.turnover / 2 {
            let k = Int(random.next() % UInt64(vehicles.count))
            withdrawn = k
            return .delete(.name(vehicles[k].name))
        }
        cursor = (cursor + 1) % vehicles.count
        var v = vehicles[cursor]
        v.progress += v.speed
        if v.progress >= 1 {
            v.from = v.to
            v.to = nearbyCity(of: v.from)
            v.progress = 0
        }
        vehicles[cursor] = v
        return upsert(v)
    }

    private mutating func makeVehicle() -> Vehicle {
        nextNumber += 1
        let from = jittered(TourCities.all[Int(random.next() % UInt64(TourCities.all.count))])
        return Vehicle(
            name: "mover-\(nextNumber)", from: from, to: nearbyCity(of: from), progress: random.nextUnit(),
            speed: 0.002 + 0.01 * random.nextUnit())
    }

    /// A point a few tens of kilometres to a few degrees away: the next stop.
    private mutating func nearbyCity(of c: Coordinate) -> Coordinate {
        let reach = 0.2 + 3 * random.nextUnit()
        return Coordinate(
            lat: min(80, max(-80, c.lat + reach * (random.nextUnit() * 2 - 1))),
            lon: min(179.9, max(-179.9, c.lon + reach * (random.nextUnit() * 2 - 1))))
    }

    private mutating func jittered(_ c: Coordinate) -> Coordinate {
        Coordinate(lat: c.lat + (random.nextUnit() - 0.5) * 0.5, lon: c.lon + (random.nextUnit() - 0.5) * 0.5)
    }

    private func upsert(_ v: Vehicle) -> Change {
        let t = v.progress
        return .upsert(
            .name(v.name), lat: v.from.lat + (v.to.lat - v.from.lat) * t, lon: v.from.lon + (v.to.lon - v.from.lon) * t,
            properties: ["kind": "vehicle"])
    }
}
