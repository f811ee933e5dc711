/// The view a session serves and the data version it was read at: what a server's index thread
/// needs to leave out, at each publication of live data, the sessions no change reaches.
public struct ServedView: Sendable, Equatable {
    public var bbox: BBox
    /// In the index's levels (``ViewportMessage/indexZoom``).
    public var zoom: Double
    public var version: UInt64

    public init(bbox: BBox, zoom: Double, version: UInt64) {
        self.bbox = bbox
        self.zoom = zoom
        self.version = version
    }

    /// Whether the data published at version `now` may change what the view shows. Not when it was
    /// read at `previous` (the version published before) or later and no change since reaches it:
    /// it then holds at `now` too, and records so. A view read from an older index (during a
    /// publication that judged its session by the view before) may show stale data.
    /// - Parameters:
    ///   - footprint: where the changes since `previous` happened; nil when anything may have
    ///     changed (a compaction).
    ///   - options: the clustering options (radius, extent).
    public mutating func needsTelling(
        of footprint: ChangeFootprint?, previous: UInt64, now: UInt64, options: ClusterOptions
    ) -> Bool {
        guard let footprint, version >= previous, !footprint.touches(bbox, zoom: zoom, options: options) else {
            return true
        }
        version = now
        return false
    }
}
