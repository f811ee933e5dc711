import PinwheelCore
import Testing

@Suite("Feature cap")
struct FeatureCapTests {
    static func features(_ count: Int, seed: UInt64) -> [Feature] {
        var rng = SeededRandom(seed: seed)
        return (0..<count).map { k in
            // Coarse coordinates, so many features tie on distance and the id decides.
            let lat = Double(Int.random(in: -40...40, using: &rng)) / 4
            let lon = Double(Int.random(in: -720...719, using: &rng)) / 4
            return Feature(id: FeatureID(k * 7 % count), lat: lat, lon: lon, count: 1, parent: nil, row: Int32(k))
        }
    }

    @Test("keeps exactly the limit nearest the centre, as a full sort would choose them, in their original order")
    func matchesSort() {
        for seed in 1...20 as ClosedRange<UInt64> {
            let all = Self.features(2_000, seed: seed)
            let centre = Coordinate(lat: 0, lon: seed % 2 == 0 ? 179.5 : 3)
            let distance = CentreDistance(centre)
            for limit in [1, 10, 999, 1_999] {
                var kept = all
                #expect(FeatureCap.keepNearest(&kept, limit: limit, centre: centre) == all.count)
                let expected = all.enumerated().sorted {
                    let (a, b) = (
                        distance(lat: $0.element.lat, lon: $0.element.lon),
                        distance(lat: $1.element.lat, lon: $1.element.lon)
                    )
                    return a != b ? a < b : $0.element.id < $1.element.id
                }.prefix(limit).map(\.offset).sorted().map { all[$0] }
                #expect(kept == expected)
            }
        }
    }

    @Test("under the limit nothing changes; a limit of zero keeps nothing")
    func edges() {
        let all = Self.features(50, seed: 3)
        var same = all
        #expect(FeatureCap.keepNearest(&same, limit: 50, centre: Coordinate(lat: 0, lon: 0)) == 50)
        #expect(same == all)
        var none = all
        #expect(FeatureCap.keepNearest(&none, limit: 0, centre: Coordinate(lat: 0, lon: 0)) == 50)
        #expect(none.isEmpty)
    }
}
