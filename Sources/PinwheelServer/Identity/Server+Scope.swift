import PinwheelCore

/// A token's scope turned into what a session serves: clusterers over only the points it allows.
extension Server {
    /// What a session with a scope is greeted with and serves from.
    struct ScopedView {
        var dataset: HelloMessage.DatasetInfo
        var clusterers: @Sendable (Algorithm) -> any Clusterer
    }

    /// The view of `scope`: everything for an unbounded scope, else clusterers over the matching
    /// points, built on first use and again when the data has changed. Any thread.
    /// - Throws: ``FilterError`` naming the position in the filter claim that cannot be read.
    func scopedView(_ scope: ViewerScope) throws(FilterError) -> ScopedView {
        // The session asks for no filter of its own yet: its effective filter is its scope.
        let filter = EffectiveFilter(scope: try scope.expression(tenantColumn: configuration.tenantColumn))
        guard !filter.isEverything else {
            return ScopedView(
                dataset: dataset.helloInfo(aggregates: []), clusterers: { [unowned self] in clusterer(for: $0) })
        }
        let make: @Sendable (Algorithm) -> any Clusterer = { [unowned self] algorithm in
            let full = clusterer(for: algorithm)
            return scoped.clusterer(
                filter: filter, algorithm: algorithm, version: full.dataset.version,
                data: { live?.dataset ?? full.dataset })
        }
        let first = make(configuration.algorithm)
        var info = dataset.helloInfo(aggregates: [])
        info.points = first.dataset.count
        info.bounds = first.dataset.bounds
        info.unlocated = 0
        info.skipped = 0
        return ScopedView(dataset: info, clusterers: make)
    }
}
