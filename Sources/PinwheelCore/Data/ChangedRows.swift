/// The points a live index added since its base was built, as the wire reads them: their properties
/// and revisions, in rows numbered from `start` on (below `start`, a feature's row is the base
/// dataset's), so a point's encoding never needs a copy of the whole table.
public struct ChangedRows: Sendable {
    /// The first row number these rows take.
    public var start: Int32
    /// Properties of row `start + k` at row k.
    public var properties: PropertyTable
    /// Revision of row `start + k` at k (see ``Dataset/revisions``).
    public var revisions: [UInt32]

    public init(start: Int32, properties: PropertyTable, revisions: [UInt32]) {
        self.start = start
        self.properties = properties
        self.revisions = revisions
    }
}

/// A point that changed: where it is now, nil once it is deleted.
public struct ChangedPoint: Sendable, Equatable {
    public var id: UInt32
    public var position: Coordinate?

    public init(id: UInt32, position: Coordinate?) {
        self.id = id
        self.position = position
    }
}
