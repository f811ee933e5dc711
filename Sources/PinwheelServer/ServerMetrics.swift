import CoreMetrics
import PinwheelTransport
import Synchronization

import struct Histogram.Histogram
import class Prometheus.Gauge
import struct Prometheus.MetricNameDescriptor
import class Prometheus.PrometheusCollectorRegistry
import struct Prometheus.PrometheusMetricsFactory

/// The server's counters, exported at `/metrics` in Prometheus text format.
///
/// Each server owns its own registry (no global `MetricsSystem.bootstrap`), so several servers in
/// one process — as in the tests — report separately. Every method is safe from any thread.
public final class ServerMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory

    private let sessions: CoreMetrics.Meter
    private let bytesIn: CoreMetrics.Counter
    private let bytesOut: CoreMetrics.Counter
    private let batches: CoreMetrics.Counter
    private let workerQueue: CoreMetrics.Meter
    private let outboundBytes: CoreMetrics.Meter
    private let deflateGuardTrips: CoreMetrics.Meter
    private let datasetPoints: CoreMetrics.Meter
    /// Rows of the data file left out, by reason: `bad` (`--on-bad-row skip`) or `unlocated`.
    private let leftOutBad: CoreMetrics.Meter
    private let leftOutUnlocated: CoreMetrics.Meter
    private let firstBatch: CoreMetrics.Timer
    /// Live data: the version served, how long full rebuilds (compactions) take, and how long a
    /// refresh takes to lay the latest changes over the last build.
    private let dataVersion: CoreMetrics.Meter
    private let rebuild: CoreMetrics.Timer
    private let refresh: CoreMetrics.Timer
    /// Points the live index lays over its last full build (0 once a compaction caught up).
    private let deltaPoints: CoreMetrics.Meter
    /// 1 while the machine is short of cores and the workers and compactions yield (``CoreShortage``).
    private let coresShort: CoreMetrics.Meter
    /// The wait between two refreshes of a live index now (``RefreshPacing``).
    private let refreshInterval: CoreMetrics.Meter
    private let changesIn: CoreMetrics.Counter
    /// Changes accepted a second over all producers, the last whole second.
    private let ingestRate: CoreMetrics.Meter
    /// Time producers' batches waited for their share of the CPU (``IngestShare``).
    private let ingestHeld: CoreMetrics.Counter
    private let windowWait: CoreMetrics.Timer
    /// Exact percentiles of ``firstBatchMicros``, refreshed at each scrape.
    private let firstBatchP50: Prometheus.Gauge
    private let firstBatchP99: Prometheus.Gauge
    private let firstBatchMax: Prometheus.Gauge
    private let messagesIn: [String: CoreMetrics.Counter]
    private let messagesOut: [String: CoreMetrics.Counter]
    /// Sessions' turns, by the thread that ran them: a worker, or the lws service thread itself.
    private let workerTurns: CoreMetrics.Counter
    private let wholeReads: CoreMetrics.Counter
    private let moveReads: CoreMetrics.Counter
    /// Served views computed again because the data changed.
    private let viewRefreshes: CoreMetrics.Counter
    private let serviceTurns: CoreMetrics.Counter
    private let closes: Mutex<[Int: CoreMetrics.Counter]> = Mutex([:])
    /// Viewport → first batch latency in microseconds, kept exactly for the benchmark's percentiles.
    private let firstBatchMicros: Mutex<Histogram<UInt64>> = Mutex(
        Histogram(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three))

    /// Message types counted separately; anything else counts as "invalid".
    static let clientTypes = ["viewport", "ack", "expand", "settings", "held", "ping", "children", "leaves", "invalid"]
    static let serverTypes = ["hello", "batch", "expansion", "error", "presence", "pong", "children", "leaves", "ack"]

    public init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        // Sub-millisecond buckets: the floor this histogram watches is 5 ms at p99.
        let latencyBuckets: [Duration] = [
            .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
            .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .seconds(1),
        ]
        factory.durationHistogramBuckets["pinwheel_viewport_first_batch_seconds"] = latencyBuckets
        factory.durationHistogramBuckets["pinwheel_viewport_window_wait_seconds"] = latencyBuckets
        let indexBuckets: [Duration] = [
            .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2),
            .seconds(5),
        ]
        factory.durationHistogramBuckets["pinwheel_index_rebuild_seconds"] = indexBuckets
        factory.durationHistogramBuckets["pinwheel_index_refresh_seconds"] = indexBuckets
        self.factory = factory
        sessions = Meter(label: "pinwheel_sessions", factory: factory)
        bytesIn = Counter(label: "pinwheel_bytes_in_total", factory: factory)
        bytesOut = Counter(label: "pinwheel_bytes_out_total", factory: factory)
        batches = Counter(label: "pinwheel_batches_total", factory: factory)
        workerQueue = Meter(label: "pinwheel_queue_depth", dimensions: [("queue", "workers")], factory: factory)
        outboundBytes = Meter(
            label: "pinwheel_queue_depth", dimensions: [("queue", "outbound_bytes")], factory: factory)
        deflateGuardTrips = Meter(label: "pinwheel_deflate_guard_trips", factory: factory)
        datasetPoints = Meter(label: "pinwheel_dataset_points", factory: factory)
        leftOutBad = Meter(label: "pinwheel_dataset_rows_left_out", dimensions: [("reason", "bad")], factory: factory)
        leftOutUnlocated = Meter(
            label: "pinwheel_dataset_rows_left_out", dimensions: [("reason", "unlocated")], factory: factory)
        firstBatch = CoreMetrics.Timer(label: "pinwheel_viewport_first_batch_seconds", factory: factory)
        windowWait = CoreMetrics.Timer(label: "pinwheel_viewport_window_wait_seconds", factory: factory)
        dataVersion = Meter(label: "pinwheel_data_version", factory: factory)
        rebuild = CoreMetrics.Timer(label: "pinwheel_index_rebuild_seconds", factory: factory)
        refresh = CoreMetrics.Timer(label: "pinwheel_index_refresh_seconds", factory: factory)
        deltaPoints = Meter(label: "pinwheel_index_delta_points", factory: factory)
        coresShort = Meter(label: "pinwheel_cores_short", factory: factory)
        refreshInterval = Meter(label: "pinwheel_refresh_interval_seconds", factory: factory)
        changesIn = Counter(label: "pinwheel_changes_accepted_total", factory: factory)
        ingestRate = Meter(label: "pinwheel_ingest_accepted_per_second", factory: factory)
        ingestHeld = Counter(label: "pinwheel_ingest_held_microseconds_total", factory: factory)
        firstBatchP50 = registry.makeGauge(
            descriptor: Self.firstBatchDescriptor("p50", help: "Median viewport to first batch, exact"))
        firstBatchP99 = registry.makeGauge(
            descriptor: Self.firstBatchDescriptor("p99", help: "99th percentile viewport to first batch, exact"))
        firstBatchMax = registry.makeGauge(
            descriptor: Self.firstBatchDescriptor("max", help: "Slowest viewport to first batch"))
        var incoming: [String: CoreMetrics.Counter] = [:]
        for type in Self.clientTypes {
            incoming[type] = Counter(
                label: "pinwheel_messages_in_total", dimensions: [("type", type)], factory: factory)
        }
        messagesIn = incoming
        var outgoing: [String: CoreMetrics.Counter] = [:]
        for type in Self.serverTypes {
            outgoing[type] = Counter(
                label: "pinwheel_messages_out_total", dimensions: [("type", type)], factory: factory)
        }
        messagesOut = outgoing
        workerTurns = Counter(label: "pinwheel_turns_total", dimensions: [("thread", "worker")], factory: factory)
        serviceTurns = Counter(label: "pinwheel_turns_total", dimensions: [("thread", "service")], factory: factory)
        wholeReads = Counter(label: "pinwheel_viewport_reads_total", dimensions: [("read", "whole")], factory: factory)
        moveReads = Counter(label: "pinwheel_viewport_reads_total", dimensions: [("read", "moved")], factory: factory)
        viewRefreshes = Counter(label: "pinwheel_view_refreshes_total", factory: factory)
    }

    // pinwheel_viewport_first_batch_<statistic>_seconds
    private static func firstBatchDescriptor(_ statistic: String, help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(
            namespace: "pinwheel", subsystem: "viewport", metricName: "first_batch_\(statistic)", unitName: "seconds",
            helpText: help)
    }

    /// The registry's current state in Prometheus text exposition format, then the process's CPU,
    /// memory and descriptors (`ProcessMetrics`).
    /// - Parameters:
    ///   - queuedBytes: bytes waiting in every outbound queue now (the transport's count).
    ///   - deflateGuardTrips: connections failed since start because their permessage-deflate stream
    ///     would have aborted lws (the transport's count).
    public func render(queuedBytes: Int, deflateGuardTrips trips: Int) -> String {
        outboundBytes.set(queuedBytes)
        deflateGuardTrips.set(trips)
        let (_, p50, p99, max) = firstBatchPercentiles()
        firstBatchP50.set(Double(p50) / 1e6)
        firstBatchP99.set(Double(p99) / 1e6)
        firstBatchMax.set(Double(max) / 1e6)
        return MetricHelp.adding(to: registry.emitToString()) + (ProcessMetrics.current()?.prometheusText ?? "")
    }

    /// Records what was served from the data file and what was left out reading it.
    func datasetLoaded(points: Int, unlocated: Int, skipped: Int) {
        datasetPoints.set(points)
        leftOutBad.set(skipped)
        leftOutUnlocated.set(unlocated)
    }

    func sessionOpened() { sessions.increment() }
    func sessionClosed(code: Int) {
        sessions.decrement()
        closed(code: code)
    }

    /// Counts a close by its WebSocket code (also for connections refused before becoming sessions).
    func closed(code: Int) {
        let counter = closes.withLock { counters in
            if let c = counters[code] { return c }
            let c = Counter(label: "pinwheel_closes_total", dimensions: [("code", String(code))], factory: factory)
            counters[code] = c
            return c
        }
        counter.increment()
    }

    func received(type: String, bytes: Int) {
        (messagesIn[type] ?? messagesIn["invalid"])?.increment()
        bytesIn.increment(by: bytes)
    }

    func sent(type: String, bytes: Int) {
        messagesOut[type]?.increment()
        bytesOut.increment(by: bytes)
        if type == "batch" { batches.increment() }
    }

    func workerQueueDepth(_ depth: Int) { workerQueue.set(depth) }

    /// A session's turn ran, on the service thread or a worker.
    func turn(onServiceThread: Bool) { (onServiceThread ? serviceTurns : workerTurns).increment() }

    /// A viewport was served from a whole query, or as a move of the view its client had.
    func viewportRead(asMove: Bool) { (asMove ? moveReads : wholeReads).increment() }

    /// A session's served view was computed again over changed data.
    func viewRefreshed() { viewRefreshes.increment() }

    /// Records how long a viewport's first batch waited for the client's acks (its window was full).
    func windowWait(_ wait: Duration) {
        windowWait.recordNanoseconds(max(0, wait.nanoseconds))
    }

    /// A rebuilt index over data at `version` is now served.
    /// The version of live data the index was first built at (a restarted node's, after its replay).
    func dataVersionLoaded(_ version: UInt64) { dataVersion.set(Int(version)) }

    /// The index now serves `version`, with `delta` points laid over its last full build: after a
    /// refresh that took `took`, installing a rebuild that took `rebuilt` when there was one.
    func indexServes(version: UInt64, points: Int, delta: Int, took: Duration, rebuilt: Duration?) {
        dataVersion.set(Int(version))
        deltaPoints.set(delta)
        datasetPoints.set(points)
        refresh.recordNanoseconds(max(0, took.nanoseconds))
        if let rebuilt { rebuild.recordNanoseconds(max(0, rebuilt.nanoseconds)) }
    }

    /// Producers' changes made durable.
    func changesAccepted(_ count: Int) { changesIn.increment(by: count) }

    /// Changes accepted a second over all producers.
    func ingestAcceptedRate(_ perSecond: Double) { ingestRate.set(perSecond) }

    /// A producer's batch waited this long for its share of the CPU.
    func ingestHeld(_ wait: Duration) { ingestHeld.increment(by: Int(max(0, wait.nanoseconds / 1000))) }

    /// Index thread: whether the machine is short of cores now.
    func coresShort(_ short: Bool) { coresShort.set(short ? 1 : 0) }

    func refreshPaced(every interval: Duration) { refreshInterval.set(interval / .seconds(1)) }

    /// Records the server's time from a viewport's arrival to its first batch being handed to the
    /// transport (without a wait for the client's window).
    func firstBatch(after latency: Duration) {
        // Never negative: swift-prometheus traps rendering a histogram whose sum is negative.
        let nanoseconds = max(0, latency.nanoseconds)
        firstBatch.recordNanoseconds(nanoseconds)
        let micros = UInt64(nanoseconds / 1000)
        firstBatchMicros.withLock { _ = $0.record(micros) }
    }

    /// Percentiles of viewport → first batch so far, for `pinwheel` benchmarks.
    /// - Returns: (count, p50, p99, max) in microseconds.
    public func firstBatchPercentiles() -> (count: UInt64, p50: UInt64, p99: UInt64, max: UInt64) {
        firstBatchMicros.withLock { h in
            (h.totalCount, h.valueAtPercentile(50), h.valueAtPercentile(99), h.max)
        }
    }
}

extension Duration {
    /// The whole duration in nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
