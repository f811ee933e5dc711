import Foundation
import PinwheelCore

/// What counting every cluster's points per value (`--group-by`) costs: the build against one
/// without, the binary bytes it adds per cluster, and a page of 100 of a cluster's points.
extension BenchCommand {
    /// Builds compared: this many without and with, alternately, after the run's first build, so both
    /// meet a warm heap and the same spells of a shared machine's load.
    static let contentBuildPairs = 3

    func printContentCosts(_ clusterer: any Clusterer, _ dataset: Dataset) {
        let clock = ContinuousClock()
        var bare: (any Clusterer)?
        var wall: [[Double]] = [[], []]
        var cpu: [[Double]] = [[], []]
        for _ in 0..<Self.contentBuildPairs {
            for with in [false, true] {
                let started = clock.now
                let cpuStarted = BenchCommand.processCPUSeconds()
                // Choosing the values is part of the build with them: the server does it once, at start.
                let contents =
                    with ? (try? ClusterContents.choosing(groupBy: groupBy, flags: [], from: dataset)) ?? .none : .none
                let built = try? ClustererFactory.make(
                    algorithm, dataset: dataset, options: ClusterOptions(maxClusters: maxClusters), contents: contents)
                wall[with ? 1 : 0].append((clock.now - started).ms)
                cpu[with ? 1 : 0].append((BenchCommand.processCPUSeconds() - cpuStarted) * 1000)
                if !with { bare = built }
            }
        }
        guard let bare else { return }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let (bareMs, withMs) = (median(wall[0]), median(wall[1]))
        let (bareCPUMs, withCPUMs) = (median(cpu[0]), median(cpu[1]))
        print(
            "contents (group by \(clusterer.contents.column ?? "-"), \(clusterer.contents.values.count) values + other), "
                + "median of \(Self.contentBuildPairs) builds each, alternately: "
                + "build \(fixed(withMs, 1)) ms (CPU \(fixed(withCPUMs, 1))) against "
                + "\(fixed(bareMs, 1)) ms (CPU \(fixed(bareCPUMs, 1))) without: "
                + "\(fixed(withCPUMs / max(bareCPUMs, 0.001), 2))× of CPU, "
                + "\(fixed(withMs / max(bareMs, 0.001), 2))× of wall time; "
                + "load average \(fixed(BenchCommand.loadAverage(), 2))")

        var rng = SplitMix64(seed: seed ^ 0xC0_47E7)
        let centres = (0..<queries).map { _ in Int(rng.next() % UInt64(dataset.count)) }
        var out: [Feature] = []
        print("zoom  clusters  values present (mean)  binary bytes added: per cluster (mean), per value present")
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
