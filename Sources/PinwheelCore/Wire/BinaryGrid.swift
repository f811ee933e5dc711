/// The grid `pinwheel.v1+bin` rounds a feature's position to (docs/protocol.md, "Positions"): a
/// point to 1e-6° (11 cm), a cluster of the hierarchical index to the power of two of 1e-7° that is at
/// most 1/32 of a pixel at the zoom it is drawn at. A cluster stands for many points at their centroid;
/// the page draws it at that zoom, where finer digits move it by nothing a person sees, and they cost a
/// byte or two per axis on every pan.
///
/// A position on the grid is `q × unit` in fixed-point degrees (1e-7°), `q` an integer. The encoder and
/// the `held` digest of a binary session both use ``fixed(_:unit:limit:)``, so a decoded position has
/// the digest the server computes.
public enum BinaryGrid {
    /// A point's grid, and that of any feature whose id does not name a zoom: 1e-6°.
    public static let pointUnit: Int64 = 10

    /// Fixed-point latitude and longitude bounds.
    public static let latLimit: Int64 = 900_000_000
    public static let lonLimit: Int64 = 1_800_000_000

    /// The grid of the feature with this id, in fixed-point degrees.
    @inlinable public static func unit(of id: FeatureID) -> Int64 {
        // A hierarchical cluster's tag is its zoom + 1 (ClusterIndex). A pixel at zoom z spans
        // 360 / 256 / 2^z degrees, 2^(23.7 − z) fixed-point units; a 32nd of it is 2^(18.7 − z).
        let tag = id >> 32
        guard tag >= 1 && tag <= 31 else { return pointUnit }
        return 1 << max(0, 19 - Int64(tag))
    }

    /// `degrees` on a grid of `unit`: the nearest multiple (halves up), in fixed-point degrees, never
    /// beyond `limit` (a multiple past ±90° or ±180° steps back toward 0).
    @inlinable public static func fixed(_ degrees: Double, unit: Int64, limit: Int64) -> Int64 {
        multiple(degrees, unit: unit, limit: limit) * unit
    }

    /// ``fixed(_:unit:limit:)`` as a count of `unit`s.
    @inlinable public static func multiple(_ degrees: Double, unit: Int64, limit: Int64) -> Int64 {
        var q = Int64((degrees * (1e7 / Double(unit)) + 0.5).rounded(.down))
        if (q * unit).magnitude > limit.magnitude { q -= q.signum() }
        return q
    }

    /// `fixed` as a count of `unit`s, rounded down: where a delta on that grid starts from.
    @inlinable public static func steps(_ fixed: Int64, unit: Int64) -> Int64 {
        let q = fixed / unit
        return fixed % unit < 0 ? q - 1 : q
    }
}

extension WireFeature {
    /// This feature as a `pinwheel.v1+bin` session receives it: its position and anchor on its grid.
    public var onBinaryGrid: WireFeature {
        let unit = BinaryGrid.unit(of: id)
        func placed(_ c: Coordinate) -> Coordinate {
            Coordinate(
                lat: Double(BinaryGrid.fixed(c.lat, unit: unit, limit: BinaryGrid.latLimit)) / 1e7,
                lon: Double(BinaryGrid.fixed(c.lon, unit: unit, limit: BinaryGrid.lonLimit)) / 1e7)
        }
        var f = self
        let position = placed(Coordinate(lat: lat, lon: lon))
        f.lat = position.lat
        f.lon = position.lon
        f.anchor = anchor.map(placed)
        return f
    }
}
