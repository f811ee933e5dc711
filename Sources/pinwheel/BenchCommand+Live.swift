import PinwheelCore

/// `pinwheel bench --live-changes N`: what keeping the index current costs, refresh by refresh, as a
/// server with live data does between two full rebuilds.
extension BenchCommand {
    /// Figures of one simulated run of refreshes.
    struct RefreshFigures {
        var refreshes: Int
        var changesEach: Int
        /// Laying a refresh's changes over the base, ms of CPU.
        var applyMs: [Double]
        /// Publishing the delta as a queryable index (and freeing the one before), ms of CPU.
        var publishMs: [Double]
        /// The delta's size after the last refresh.
        var deltaSize: Int
        /// Viewport queries on the last published index, per zoom: median µs and features.
        var queryMedianUs: [(zoom: Int, us: Double, features: Int)]
        /// The same queries on a fresh build of the same points: what compaction will make of them.
        var freshMedianUs: [(zoom: Int, us: Double, features: Int)]
    }

    /// Lays `changes` changes over `base`, `changesEach` at a time, publishing after each batch as
    /// the server does: 90 % moves of existing points to within 2° of another point, 5 % new points
    /// there, 5 % deletes.
    func measureRefreshes(base: ClusterIndex, changes: Int, changesEach: Int) -> RefreshFigures {
        var table = PointTable(base.dataset)
        var delta = ClusterDelta(base: base)
        var rng = SplitMix64(seed: seed ^ 0xC4A6)
        var figures = RefreshFigures(
            refreshes: 0, changesEach: changesEach, applyMs: [], publishMs: [], deltaSize: 0, queryMedianUs: [],
            freshMedianUs: [])
        var version: UInt64 = 0
        var inserted: UInt32 = 0
        var live = LiveClusterIndex(base: base)
        while Int(version) < changes {
            var batch: [ChangedPoint] = []
            for _ in 0..<changesEach {
                version += 1
                let ids = table.dataset.ids
                let near = Int(rng.next() % UInt64(table.count))
                let lat = min(85, max(-85, table.dataset.lat(near) + (rng.nextUnit() - 0.5) * 4))
                let lon = min(180, max(-180, table.dataset.lon(near) + (rng.nextUnit() - 0.5) * 4))
                let roll = rng.nextUnit()
                let change: Change
                if roll < 0.05 {
                    change = .delete(.number(ids[Int(rng.next() % UInt64(ids.count))]))
                } else if roll < 0.10 {
                    inserted += 1
                    change = .upsert(.number(PointKey.firstNamedID - inserted), lat: lat, lon: lon, properties: [:])
                } else {
                    change = .upsert(
                        .number(ids[Int(rng.next() % UInt64(ids.count))]), lat: lat, lon: lon, properties: [:])
                }
                let id = table.id(of: change.key)
                table.apply(change, version: version)
                if case .upsert = change {
                    let now = table.id(of: change.key)!
                    batch.append(ChangedPoint(id: now, now: table.record(ofID: now)))
                } else if let id {
                    batch.append(ChangedPoint(id: id, now: nil))
                }
            }
            // Thread CPU time: on a busy machine wall time would add the waits for a core.
            let start = BenchCommand.threadCPUSeconds()
            for change in batch { delta.apply(change) }
            let applied = BenchCommand.threadCPUSeconds()
            live = LiveClusterIndex(
                delta: delta, version: version, names: table.dataset.names,
                columns: table.dataset.properties.columns, pointCount: table.count)
            figures.applyMs.append((applied - start) * 1000)
            figures.publishMs.append((BenchCommand.threadCPUSeconds() - applied) * 1000)
            figures.refreshes += 1
        }
        figures.deltaSize = delta.size
        let results = measureQueries(live, table.dataset)
        figures.queryMedianUs = results.map { ($0.zoom, $0.medianUs, $0.featuresMedian) }
        if let fresh = try? ClusterIndex(dataset: table.dataset, options: base.options) {
            figures.freshMedianUs = measureQueries(fresh, table.dataset).map {
                ($0.zoom, $0.medianUs, $0.featuresMedian)
            }
        }
        return figures
    }
}
