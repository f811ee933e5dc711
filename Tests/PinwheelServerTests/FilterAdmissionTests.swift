import Foundation
import PinwheelCore
import Testing

@testable import PinwheelServer

@Suite("Filter admission")
struct FilterAdmissionTests {
    static let start = ContinuousClock.now

    static func held(_ key: String, _ bytes: Int, inUse: Bool = false, at seconds: Int = 0) -> FilterAdmission.Held {
        FilterAdmission.Held(key: key, bytes: bytes, inUse: inUse, lastUsed: start + .seconds(seconds))
    }

    @Test("the estimate lies above what each measured hierarchical index held, by at most 15 %")
    func estimateCoversMeasurements() {
        // `pinwheel bench --synthetic 1000000 --tenants 20 --filter …`: the full index held 288.7 MB;
        // each filter's points and its index's MB.
        let full = Int(288.7 * 1_048_576)
        let measured: [(points: Int, mb: Double)] = [
            (971, 0.53), (10_114, 4.36), (49_889, 18.85), (100_177, 35.81), (250_188, 82.19),
            (499_328, 155.41), (900_012, 266.99),
        ]
        for (points, mb) in measured {
            let estimate = Double(
                FilterAdmission.estimate(
                    algorithm: .hierarchical, points: points, fullBytes: full, fullPoints: 1_000_000))
            let bytes = mb * 1_048_576
            #expect(estimate >= bytes, "\(points) points: estimated \(estimate), held \(bytes)")
            #expect(estimate <= bytes * 1.15, "\(points) points: estimated \(estimate), held \(bytes)")
        }
    }

    @Test("a sparser subset is estimated at more per point; a pca-tree at its share; no points at the floor")
    func estimateShape() {
        let per = { (algorithm: Algorithm, points: Int) in
            Double(
                FilterAdmission.estimate(
                    algorithm: algorithm, points: points, fullBytes: 300_000_000, fullPoints: 1_000_000)
                    - FilterAdmission.floor) / Double(points)
        }
        #expect(per(.hierarchical, 10_000) > per(.hierarchical, 500_000))
        #expect(abs(per(.pcaTree, 10_000) - 300 * FilterAdmission.margin) < 0.01)
        #expect(abs(per(.pcaTree, 500_000) - 300 * FilterAdmission.margin) < 0.01)
        #expect(
            FilterAdmission.estimate(algorithm: .hierarchical, points: 0, fullBytes: 300, fullPoints: 1)
                == FilterAdmission.floor)
        #expect(
            FilterAdmission.estimate(algorithm: .hierarchical, points: 0, fullBytes: 0, fullPoints: 0)
                == FilterAdmission.floor)
    }

    @Test("an index that fits beside all the others is admitted, letting nothing go")
    func fits() {
        let decision = FilterAdmission.decide(
            estimate: 40, budget: 100, held: [Self.held("a", 30, inUse: true), Self.held("b", 30)])
        #expect(decision == .admit(letGo: []))
        // Exactly at the budget still fits.
        #expect(
            FilterAdmission.decide(estimate: 40, budget: 100, held: [Self.held("a", 60, inUse: true)])
                == .admit(letGo: []))
    }

    @Test("unused indexes go, least recently used first, only as many as the new one needs")
    func letsGoOfUnusedLeastRecentFirst() {
        let held = [
            Self.held("used", 30, inUse: true, at: 0), Self.held("newer", 20, at: 5), Self.held("oldest", 20, at: 1),
            Self.held("middle", 20, at: 3),
        ]
        // 90 held: 40 more needs 30 gone, the two least recently used.
        #expect(FilterAdmission.decide(estimate: 40, budget: 100, held: held) == .admit(letGo: ["oldest", "middle"]))
    }

    @Test("an index that does not fit beside those in use is refused, and no unused one goes for it")
    func refused() {
        let held = [Self.held("a", 60, inUse: true), Self.held("b", 30, inUse: true), Self.held("c", 5)]
        #expect(FilterAdmission.decide(estimate: 11, budget: 100, held: held) == .refuse(inUse: 90))
        #expect(FilterAdmission.decide(estimate: 10, budget: 100, held: held) == .admit(letGo: ["c"]))
    }
}
