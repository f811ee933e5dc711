import Foundation
import PinwheelCore

/// What counting every cluster's points per value (`--group-by`) costs: the build against one
/// without, the binary bytes it adds per cluster, and a page of 100 of a cluster's points.
extension BenchCommand {
    func printContentCosts(
        _ clusterer: any Clusterer, _ dataset: Dataset, withContentsMs: Double, withContentsCPUMs: Double
    ) {
        let clock = ContinuousClock()
        let started = clock.now
        let cpuStarted = BenchCommand.processCPUSeconds()
        guard
            let bare = try? ClustererFactory.make(
                algorithm, dataset: dataset, options: ClusterOptions(maxClusters: maxClusters))
        else { return }
        let bareMs = (clock.now - started).ms
        let bareCPUMs = (BenchCommand.processCPUSeconds() - cpuStarted) * 1000
        print(
            "contents (group by \(clusterer.contents.column ?? "-"), \(clusterer.contents.values.count) values + other): "
                + "build \(fixed(withContentsMs, 1)) ms (CPU \(fixed(withContentsCPUMs, 1))) against "
                + "\(fixed(bareMs, 1)) ms (CPU \(fixed(bareCPUMs, 1))) without: "
                + "\(fixed(withContentsCPUMs / max(bareCPUMs, 0.001), 2))× of CPU, "
                + "\(fixed(withContentsMs / max(bareMs, 0.001), 2))× of wall time")

        var rng = SplitMix64(seed: seed ^ 0xC0_47E7)
        let centres = (0..<queries).map { _ in Int(rng.next() % UInt64(dataset.count)) }
        var out: [Feature] = []
        print("zoom  clusters  values present (mean)  binary bytes added per cluster (mean, max per value)")
        var pageMicros: [Double] = []
        let pageClusters = max(1, 2_000 / BenchCommand.zooms.count)
        for zoom in BenchCommand.zooms {
            var clusters: [Feature] = []
            for c in centres {
                let box = BenchCommand.viewport(
                    center: Coordinate(lat: dataset.lat(c), lon: dataset.lon(c)), zoom: zoom, width: 1280, height: 800)
                clusterer.features(in: box, zoom: Double(zoom), into: &out)
                clusters += out.filter { !$0.isPoint }
            }
            guard !clusters.isEmpty else { continue }
            // The same clusters encoded in one batch with and without their counts.
            let withBytes = BenchCommand.binaryBytes(clusters, FeatureContext(clusterer: clusterer))
            let bareBytes = BenchCommand.binaryBytes(clusters, FeatureContext(clusterer: bare))
            var present = 0
            let context = FeatureContext(clusterer: clusterer)
            var counts: [Int32] = []
            for f in clusters where context.counts(of: f, into: &counts) {
                present += counts.prefix(clusterer.contents.groupSlots).count { $0 != 0 }
            }
            let added = Double(withBytes - bareBytes)
            print(
                pad(String(zoom), 4) + pad(String(clusters.count), 10)
                    + pad(fixed(Double(present) / Double(clusters.count), 2), 23)
                    + pad(fixed(added / Double(clusters.count), 2), 10)
                    + pad(fixed(added / Double(max(present, 1)), 2), 10))
            // A first page of 100 for some of them: members (the whole cluster's points), then the page.
            for f in clusters.prefix(pageClusters) {
                let start = clock.now
                guard
                    let page = clusterer.memberPage(
                        of: f.id, zoom: Double(zoom), after: nil, limit: LeavesRequest.defaultLimit)
                else { continue }
                var encoder = MessageEncoder()
                encoder.leaves(
                    req: 1, id: f.id, total: page.total, page.points, next: nil,
                    context: FeatureContext(clusterer: clusterer))
                pageMicros.append((clock.now - start).us)
            }
        }
        pageMicros.sort()
        if !pageMicros.isEmpty {
            let p99 = pageMicros[min(pageMicros.count - 1, Int((Double(pageMicros.count) * 0.99).rounded(.up)) - 1)]
            print(
                "leaves page of 100 (chosen and encoded as JSON), \(pageMicros.count) clusters of the zooms above: "
                    + "median \(fixed(pageMicros[pageMicros.count / 2] / 1000, 3)) ms, p99 \(fixed(p99 / 1000, 3)) ms, "
                    + "max \(fixed(pageMicros.last! / 1000, 3)) ms")
        }
    }

    /// The bytes of one binary batch adding `features`.
    static func binaryBytes(_ features: [Feature], _ context: FeatureContext) -> Int {
        var encoder = BinaryMessageEncoder()
        encoder.batch(
            seq: 1, number: 1, removeSlots: [], held: 0, add: features, update: [], done: true, context: context)
        return encoder.message.count
    }
}
