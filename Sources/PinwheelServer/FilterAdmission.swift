import Foundation
import PinwheelCore

/// Whether a filtered index no session has yet may be built within `--filter-memory`, and which
/// unused indexes must be let go of to make room: the registry's rule, apart from its locks and builds.
///
/// The indexes sessions use are never let go of, so they bound what may be added: a new index is
/// admitted only when they, plus the indexes being built, plus its estimate, fit in the budget once
/// every unused index that has to go (least recently used first) is gone.
struct FilterAdmission: Equatable {
    /// An index held now.
    struct Held: Equatable {
        var key: String
        var bytes: Int
        /// Used by a session, or being built: never let go of.
        var inUse: Bool
        /// When it was last asked for; the least recent goes first.
        var lastUsed: ContinuousClock.Instant
    }

    enum Decision: Equatable {
        /// Build it, once these unused indexes (keys, least recently used first) are let go of.
        case admit(letGo: [String])
        /// It does not fit even with every unused index gone: the bytes the indexes in use hold.
        case refuse(inUse: Int)
    }

    /// The estimate's headroom over what the indexes measured held.
    static let margin = 1.05
    /// A `hierarchical` index of a sparser subset holds more per point: its points lie farther apart,
    /// so fewer merge into clusters at each zoom. Per point it held the full index's bytes times
    /// 1 + this × ln(1 / share) (`pinwheel bench --synthetic 1000000 --tenants 20 --filter …`: 1.89 at
    /// 0.1 %, 1.49 at 1 %, 1.31 at 5 %, 1.24 at 10 %, 1.14 at 25 %, 1.08 at 50 %, 1.03 at 90 %), so
    /// with ``margin`` and ``floor`` the estimate lies 3 to 14 % above each. A `pca-tree` holds its share.
    static let sparsity = 0.12
    /// What any index holds whatever its points (its levels' arrays), so a filter of a handful of
    /// points is not estimated at nothing.
    static let floor = 64 << 10

    /// The bytes an index of `algorithm` over `points` points is estimated to hold, from a full index's
    /// `fullBytes` over its `fullPoints` (the same algorithm's when built, else the default one's).
    static func estimate(algorithm: Algorithm, points: Int, fullBytes: Int, fullPoints: Int) -> Int {
        guard fullPoints > 0, points > 0 else { return floor }
        let perPoint = Double(fullBytes) / Double(fullPoints)
        let share = min(1, Double(points) / Double(fullPoints))
        let sparse = algorithm == .hierarchical ? 1 + sparsity * log(1 / share) : 1
        return floor + Int((perPoint * Double(points) * sparse * margin).rounded(.up))
    }

    /// Whether an index estimated at `estimate` bytes may be built beside `held`, within `budget`.
    static func decide(estimate: Int, budget: Int, held: [Held]) -> Decision {
        let inUse = held.filter(\.inUse).reduce(0) { $0 + $1.bytes }
        guard inUse + estimate <= budget else { return .refuse(inUse: inUse) }
        var total = held.reduce(0) { $0 + $1.bytes }
        var letGo: [String] = []
        for index in held.filter({ !$0.inUse }).sorted(by: { $0.lastUsed < $1.lastUsed }) {
            guard total + estimate > budget else { break }
            total -= index.bytes
            letGo.append(index.key)
        }
        return .admit(letGo: letGo)
    }
}
