/// A point that changed: where it is now and what it carries, or nil once it is deleted.
public struct ChangedPoint: Sendable, Equatable {
    /// What a point was before a change, as far as its producer knew.
    public enum Prior: Sendable, Equatable {
        case unknown
        /// No point had the id.
        case absent
        /// Its property values (in the column order of that moment).
        case values([PropertyValue?])
    }

    public var id: UInt32
    public var now: PointRecord?
    /// Lets a filtered view pass over a change that concerns none of its points without looking for
    /// the point in its index.
    public var prior: Prior

    public init(id: UInt32, now: PointRecord?, prior: Prior = .unknown) {
        self.id = id
        self.now = now
        self.prior = prior
    }
}

/// What a changed point is now: its position, its property values (in the table's column order;
/// columns only ever grow, so they stay aligned with a later table's first columns) and revision.
public struct PointRecord: Sendable, Equatable {
    public var position: Coordinate
    public var values: [PropertyValue?]
    public var revision: UInt32

    public init(position: Coordinate, values: [PropertyValue?] = [], revision: UInt32 = 0) {
        self.position = position
        self.values = values
        self.revision = revision
    }
}

/// How the wire reads points a live index added since its base was built: their rows start at
/// `start` (below it, a feature's row is the base dataset's), and their properties come by id.
public struct ChangedRows: Sendable {
    /// The row number every added point carries.
    public var start: Int32
    /// The property columns now.
    public var columns: [String]
    /// An added point's property values, by id.
    public var values: @Sendable (UInt32) -> [PropertyValue?]

    public init(start: Int32, columns: [String], values: @escaping @Sendable (UInt32) -> [PropertyValue?]) {
        self.start = start
        self.columns = columns
        self.values = values
    }
}
