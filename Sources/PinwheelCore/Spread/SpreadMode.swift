/// How the members of a same-coordinate group are laid out around their shared point.
public enum SpreadMode: String, CaseIterable, Sendable, Codable {
    /// The published design, independent of zoom: members in id order on one circle, member i at
    /// bearing 2π·i/n and distance 3·n/2 metres (``Sphere/destination(from:bearing:distance:)``).
    case seed
    /// Spacing fixed in screen pixels at the current zoom, so pins never overlap and never fly far:
    /// a circle up to ``SpreadPlacement/maxCircleCount`` members, an Archimedean spiral beyond.
    case adaptive
}
