import ArgumentParser
import Foundation
import PinwheelCore
import PinwheelServer

extension Algorithm: ExpressibleByArgument {}

/// `pinwheel bench`: build time, memory and viewport query latency of a clusterer, from a command
/// anyone can run.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measures index build time, memory and viewport query latency.",
        discussion: """
            Viewports are 1280×800 pixels on 512-pixel tiles, centred on random data points, at zooms \
            2, 5, 8, 11, 14 and 17. Each round queries every viewport once; median and p99 are over \
            all rounds, in wall time and in the thread's CPU time (which leaves out time spent \
            preempted on a busy machine). A pan is each viewport moved 128 pixels east, read as a \
            move (what enters and leaves the view) where the algorithm can.
            """)

    @Option(help: "Dataset file (.csv, .geojson or .ndjson).")
    var data: String?

    @Option(help: "Generate this many synthetic points instead of reading a file.")
    var synthetic: Int?

    @Option(help: "Seed of the synthetic data and of the viewport centres.")
    var seed: UInt64 = 1

    @Option(help: "Clustering algorithm: \(Algorithm.allCases.map(\.rawValue).joined(separator: ", ")).")
    var algorithm: Algorithm = .hierarchical

    @Option(help: "Most features per viewport for pca-tree (1...\(ClusterOptions.maxClustersLimit)).")
    var maxClusters = 32

    @Option(help: "Viewports per zoom.")
    var queries: Int = 200

    @Option(help: "Rounds over the viewports.")
    var rounds: Int = 5

    @Option(
        help:
            "Then lay this many live changes over the index, as a server with live data does between two full rebuilds, and report what each refresh cost (hierarchical only)."
    )
    var liveChanges = 0

    @Option(help: "Changes per refresh with --live-changes (a server at 10,000 changes/s refreshes every 50 ms).")
    var changesPerRefresh = 500

    @Flag(help: "Print one JSON object instead of text.")
    var json = false

    @Option(help: "Give synthetic points a `kind` column of this many values (kind-0 the most common).")
    var categories = 0

    @Option(
        name: .customLong("group-by"),
        help: "Count every cluster's points per value of this column, and measure what that costs.")
    var groupBy: String?

    @Option(
        help: """
            Give synthetic points `tenant` (t0 … tN-1, equally common) and `speed` (0 to 99.9) columns, \
            as `serve --synthetic-tenants` does.
            """)
    var tenants = 0

    @Option(
        help: """
            Measure what a never-seen filter costs instead of viewport queries: selecting its points, \
            copying them and building their index, each round; and its index's bytes against its share \
            of the full index's. A filter expression as JSON, e.g. '["<",["get","speed"],10]'.
            """)
    var filter: String?

    static let zooms = [2, 5, 8, 11, 14, 17]

    func validate() throws {
        guard (data == nil) != (synthetic == nil) else {
            throw ValidationError("give exactly one of --data FILE or --synthetic N")
        }
        if let synthetic, synthetic < 0 || synthetic > ClusterIndex.maxPoints {
            throw ValidationError("--synthetic must be within 0...\(ClusterIndex.maxPoints), got \(synthetic)")
        }
        guard queries > 0 && rounds > 0 else { throw ValidationError("--queries and --rounds must be positive") }
        if liveChanges < 0 || changesPerRefresh < 1 {
            throw ValidationError("--live-changes must be 0 or more and --changes-per-refresh at least 1")
        }
        if groupBy != nil && json { throw ValidationError("--group-by measures in text") }
        if tenants < 0 || tenants > 1_000_000 {
            throw ValidationError("--tenants must be 0...1000000, got \(tenants)")
        }
        if filter != nil && (json || liveChanges > 0 || groupBy != nil) {
            throw ValidationError("--filter measures in text, without --live-changes or --group-by")
        }
        if categories < 0 || categories > 255 {
            throw ValidationError("--categories must be 0...255, got \(categories)")
        }
        if liveChanges > 0 && (algorithm != .hierarchical || json) {
            throw ValidationError("--live-changes measures the hierarchical index, in text")
        }
    }

    func run() throws {
        let (dataset, source, parse) = try loadDataset()
        let loadBefore = BenchCommand.loadAverage()
        let clock = ContinuousClock()
        let started = clock.now
        let cpuStarted = BenchCommand.processCPUSeconds()
        let contents = try ClusterContents.choosing(groupBy: groupBy, flags: [], from: dataset)
        let clusterer = try ClustererFactory.make(
            algorithm, dataset: dataset, options: ClusterOptions(maxClusters: maxClusters), contents: contents)
        let buildTime = clock.now - started
        // On a shared machine wall time includes waiting for a core; CPU time shows the work itself.
        let buildCPUMs = (BenchCommand.processCPUSeconds() - cpuStarted) * 1000
        let peakMB = BenchCommand.peakResidentMB()
        let statistics = clusterer as? any ClusterStatistics
        let items = statistics?.itemsPerZoom ?? [:]
        let totalItems = items.values.reduce(0, +)
        let bytesPerItem = totalItems > 0 ? Double(statistics?.storedBytes ?? 0) / Double(totalItems) : 0
        if let filter {
            print("dataset: \(source), \(dataset.count) points; full index \(fixed(buildTime.ms, 1)) ms")
            try measureFilter(filter, dataset: dataset, full: clusterer)
            return
        }
        let results = measureQueries(clusterer, dataset)

        if json {
            let zoomItems = items.keys.sorted().map { "\"\($0)\":\(items[$0]!)" }.joined(separator: ",")
            let queryFields = results.map {
                "\"\($0.zoom)\":{\"medianUs\":\(fixed($0.medianUs, 2)),\"p99Us\":\(fixed($0.p99Us, 2)),"
                    + "\"cpuMedianUs\":\(fixed($0.cpuMedianUs, 2)),\"cpuP99Us\":\(fixed($0.cpuP99Us, 2)),"
                    + "\"featuresMedian\":\($0.featuresMedian)"
                    + ($0.panCPUMedianUs.map { ",\"panCPUMedianUs\":\(fixed($0, 2))" } ?? "") + "}"
            }.joined(separator: ",")
            var fields = [
                "\"points\":\(dataset.count)", "\"algorithm\":\"\(algorithm.rawValue)\"",
                "\"buildMs\":\(fixed(buildTime.ms, 1))", "\"buildCPUMs\":\(fixed(buildCPUMs, 1))",
                "\"loadAverage\":\(fixed(loadBefore, 2))", "\"peakRSSMB\":\(fixed(peakMB, 1))",
                "\"bytesPerItem\":\(fixed(bytesPerItem, 2))", "\"itemsPerZoom\":{\(zoomItems)}",
                "\"queries\":{\(queryFields)}",
            ]
            if let parse {
                fields += [
                    "\"parseMs\":\(fixed(parse.time.ms, 1))", "\"datasetRSSMB\":\(fixed(parse.datasetMB, 1))",
                    "\"parsePeakRSSMB\":\(fixed(parse.peakMB, 1))",
                ]
            }
            print("{" + fields.joined(separator: ",") + "}")
            return
        }
        print("dataset: \(source), \(dataset.count) points")
        if let parse {
            print(
                "parse \(dataset.count) points: \(fixed(parse.time.ms, 1)) ms; the dataset then holds "
                    + "\(fixed(parse.datasetMB, 1)) MB of RSS, parsing peaked \(fixed(parse.peakMB, 1)) MB above the "
                    + "start (\(fixed(parse.peakMB / max(parse.datasetMB, 1), 2))×)")
        }
        print(
            "index \(dataset.count) points (\(algorithm.rawValue)): \(fixed(buildTime.ms, 1)) ms "
                + "(CPU \(fixed(buildCPUMs, 1)) ms; load average \(fixed(loadBefore, 2)) before)")
        print("peak RSS: \(fixed(peakMB, 1)) MB")
        print(
            "stored: \(fixed(Double(statistics?.storedBytes ?? 0) / 1_048_576, 1)) MB in \(totalItems) items, "
                + "\(fixed(bytesPerItem, 2)) bytes per item")
        print("items per zoom: " + items.keys.sorted().map { "\($0):\(items[$0]!)" }.joined(separator: " "))
        print("viewport 1280x800 px, 512-px tiles, \(queries) centres x \(rounds) rounds:")
        print("zoom  median µs     p99 µs  CPU median  CPU p99  features (median)  pan, CPU median")
        for r in results {
            print(
                pad(String(r.zoom), 4) + pad(fixed(r.medianUs, 2), 11) + pad(fixed(r.p99Us, 2), 11)
                    + pad(fixed(r.cpuMedianUs, 2), 12) + pad(fixed(r.cpuP99Us, 2), 9)
                    + pad(String(r.featuresMedian), 19) + pad(r.panCPUMedianUs.map { fixed($0, 2) } ?? "—", 17))
        }
        if !contents.isEmpty, dataset.count > 0 {
            printContentCosts(clusterer, dataset)
        }
        if liveChanges > 0, let base = clusterer as? ClusterIndex, dataset.count > 0 {
            let live = measureRefreshes(base: base, changes: liveChanges, changesEach: changesPerRefresh)
            func percentiles(_ values: [Double]) -> String {
                let sorted = values.sorted()
                let p99 = sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
                return
                    "p50 \(fixed(sorted[sorted.count / 2], 2)) / p99 \(fixed(p99, 2)) / max \(fixed(sorted.last!, 2)) ms"
            }
            print(
                "live: \(live.refreshes) refreshes of \(live.changesEach) changes (delta of \(live.deltaSize) at the end):"
            )
            print("  laying changes over the index: " + percentiles(live.applyMs) + " of CPU")
            print("  publishing the live index:     " + percentiles(live.publishMs) + " of CPU")
            func queries(_ figures: [(zoom: Int, us: Double, features: Int)]) -> String {
                figures.map { "\($0.zoom): \(fixed($0.us, 1)) (\($0.features))" }.joined(separator: ", ")
            }
            print("  queries on the last one, zoom: median µs (features): " + queries(live.queryMedianUs))
            print("  the same on a fresh build of the same points:       " + queries(live.freshMedianUs))
        }
    }

    /// What reading a data file cost: wall time, and RSS above what the process held before it.
    private struct ParseFigures {
        var time: Duration
        /// RSS growth once parsing is done: the dataset's own memory.
        var datasetMB: Double
        /// Peak RSS growth while parsing (file bytes, dataset and parser state).
        var peakMB: Double
    }

    /// The dataset, how to name it, and for a file what parsing it cost (read as `serve` reads it).
    private func loadDataset() throws -> (Dataset, String, ParseFigures?) {
        if let synthetic {
            var generator = SyntheticGenerator(seed: seed)
            generator.categories = categories
            generator.tenants = tenants
            let kinds =
                (categories > 0 ? ", \(categories) kinds" : "") + (tenants > 0 ? ", \(tenants) tenants" : "")
            return (generator.dataset(count: synthetic), "synthetic (seed \(seed)\(kinds))", nil)
        }
        let path = data!
        let before = BenchCommand.statusMB("VmRSS:")
        let started = ContinuousClock.now
        let loaded = try DatasetSource.file(path).load(badRows: .skip)
        let parse = ParseFigures(
            time: ContinuousClock.now - started, datasetMB: BenchCommand.statusMB("VmRSS:") - before,
            peakMB: BenchCommand.peakResidentMB() - before)
        let skipped = loaded.skipped > 0 ? " (\(loaded.skipped) bad rows skipped)" : ""
        return (loaded.dataset, (path as NSString).lastPathComponent + skipped, parse)
    }

    struct ZoomResult {
        var zoom: Int
        var medianUs: Double
        var p99Us: Double
        /// The same over the thread's CPU time, which leaves out time spent preempted.
        var cpuMedianUs: Double
        var cpuP99Us: Double
        var featuresMedian: Int
        /// CPU median of reading a pan as a move; nil when the clusterer reads only whole views.
        var panCPUMedianUs: Double?
    }

    func measureQueries(_ clusterer: any Clusterer, _ dataset: Dataset) -> [ZoomResult] {
        guard dataset.count > 0 else { return [] }
        var rng = SplitMix64(seed: seed ^ 0x5EED)
        let centres = (0..<queries).map { _ in Int(rng.next() % UInt64(dataset.count)) }
        let clock = ContinuousClock()
        var out: [Feature] = []
        out.reserveCapacity(4096)
        return BenchCommand.zooms.map { zoom in
            let boxes = centres.map {
                BenchCommand.viewport(
                    center: Coordinate(lat: dataset.lat($0), lon: dataset.lon($0)), zoom: zoom, width: 1280,
                    height: 800)
            }
            var micros: [Double] = []
            var cpuMicros: [Double] = []
            var featureCounts: [Int] = []
            micros.reserveCapacity(boxes.count * rounds)
            cpuMicros.reserveCapacity(boxes.count * rounds)
            for _ in 0..<rounds {
                for box in boxes {
                    let cpuStart = BenchCommand.threadCPUSeconds()
                    let start = clock.now
                    clusterer.features(in: box, zoom: Double(zoom), into: &out)
                    micros.append((clock.now - start).us)
                    cpuMicros.append((BenchCommand.threadCPUSeconds() - cpuStart) * 1e6)
                    featureCounts.append(out.count)
                }
            }
            micros.sort()
            cpuMicros.sort()
            featureCounts.sort()
            let p99 = min(micros.count - 1, Int((Double(micros.count) * 0.99).rounded(.up)) - 1)
            return ZoomResult(
                zoom: zoom, medianUs: micros[micros.count / 2], p99Us: micros[p99],
                cpuMedianUs: cpuMicros[cpuMicros.count / 2], cpuP99Us: cpuMicros[p99],
                featuresMedian: featureCounts[featureCounts.count / 2],
                panCPUMedianUs: measurePans(clusterer, from: boxes, centres: centres, dataset: dataset, zoom: zoom))
        }
    }

    /// The CPU median of reading each box's pan by 128 pixels east as a move, or nil when the
    /// clusterer reads only whole views (or no pan stays off the antimeridian).
    func measurePans(_ clusterer: any Clusterer, from boxes: [BBox], centres: [Int], dataset: Dataset, zoom: Int)
        -> Double?
    {
        let pans = centres.map {
            BenchCommand.viewport(
                center: Coordinate(lat: dataset.lat($0), lon: dataset.lon($0)), zoom: zoom, width: 1280, height: 800,
                east: 128)
        }
        var entering: [Feature] = []
        var leaving: [FeatureID] = []
        var cpuMicros: [Double] = []
        for _ in 0..<rounds {
            for (box, pan) in zip(boxes, pans) {
                let cpuStart = BenchCommand.threadCPUSeconds()
                let answered = clusterer.viewMoved(
                    from: box, zoom: Double(zoom), to: pan, zoom: Double(zoom), entering: &entering, leaving: &leaving)
                if answered { cpuMicros.append((BenchCommand.threadCPUSeconds() - cpuStart) * 1e6) }
            }
        }
        guard !cpuMicros.isEmpty else { return nil }
        cpuMicros.sort()
        return cpuMicros[cpuMicros.count / 2]
    }

    /// The box a `width`×`height`-pixel map on 512-pixel tiles shows around a centre at a zoom, its
    /// centre moved `east` pixels.
    static func viewport(center: Coordinate, zoom: Int, width: Double, height: Double, east: Double = 0) -> BBox {
        let world = 512 * pow(2, Double(zoom))
        let cx = Mercator.x(lon: center.lon) * world + east
        let cy = Mercator.y(lat: center.lat) * world
        let north = Mercator.lat(y: max(0, cy - height / 2) / world)
        let south = Mercator.lat(y: min(world, cy + height / 2) / world)
        return BBox.normalized(
            west: Mercator.lon(x: (cx - width / 2) / world), south: south,
            east: Mercator.lon(x: (cx + width / 2) / world), north: north)
    }

    /// CPU time used by this process so far, all threads, in seconds.
    static func processCPUSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) * 1e-9
    }

    /// CPU time used by the calling thread so far, in seconds.
    static func threadCPUSeconds() -> Double {
        let now = ThreadCPUClock.now().components
        return Double(now.seconds) + Double(now.attoseconds) * 1e-18
    }

    /// The one-minute load average, so a reader can tell a busy machine's figures; 0 where unknown.
    static func loadAverage() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return 0 }
        return Double(text.split(separator: " ").first.map(String.init) ?? "") ?? 0
    }

    /// Peak resident set size of this process (VmHWM), in MB; 0 where /proc is unavailable.
    static func peakResidentMB() -> Double { statusMB("VmHWM:") }

    /// A memory field of /proc/self/status (`VmRSS:`, `VmHWM:`), in MB; 0 where unavailable.
    static func statusMB(_ field: String) -> Double {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix(field) {
            let kb = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first
            return Double(kb.map(String.init) ?? "0").map { $0 / 1024 } ?? 0
        }
        return 0
    }
}

func fixed(_ value: Double, _ decimals: Int) -> String {
    String(format: "%.\(decimals)f", value)
}

func pad(_ text: String, _ width: Int) -> String {
    String(repeating: " ", count: max(0, width - text.count)) + text
}

extension Duration {
    var ms: Double { Double(components.seconds) * 1e3 + Double(components.attoseconds) * 1e-15 }
    var us: Double { Double(components.seconds) * 1e6 + Double(components.attoseconds) * 1e-12 }
}
