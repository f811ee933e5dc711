/// A producer's name for a point: an integer or a string. Points loaded at start-up are named by their
/// dataset id.
public enum PointKey: Hashable, Sendable, CustomStringConvertible {
    /// 0 ... ``PointKey/maxNumber``: the point's feature id is the number itself.
    case number(UInt32)
    /// 1 ... ``PointKey/maxNameBytes`` bytes of UTF-8: the point gets a feature id from
    /// ``PointKey/firstNamedID`` up.
    case name(String)

    /// Largest integer key; the ids above it are given to points named by strings.
    public static let maxNumber: UInt32 = (1 << 31) - 1
    /// The first feature id given to a point named by a string.
    public static let firstNamedID: UInt32 = 1 << 31
    /// Longest string key, in UTF-8 bytes.
    public static let maxNameBytes = 128

    public var description: String {
        switch self {
        case .number(let n): String(n)
        case .name(let s): "\"\(s)\""
        }
    }
}

/// One change a producer makes to the live points.
public enum Change: Equatable, Sendable {
    /// Creates the point or replaces its position and properties.
    case upsert(PointKey, lat: Double, lon: Double, properties: [String: PropertyValue])
    /// Removes the point; a key no point has is accepted and changes nothing, so retries are safe.
    case delete(PointKey)

    /// The point the change is about.
    public var key: PointKey {
        switch self {
        case .upsert(let key, _, _, _), .delete(let key): key
        }
    }
}
