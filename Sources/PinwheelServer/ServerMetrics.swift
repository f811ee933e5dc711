import CoreMetrics
import PinwheelTransport
import Synchronization

import class Prometheus.PrometheusCollectorRegistry
import struct Prometheus.PrometheusMetricsFactory

/// The server's counters, exported at `/metrics` in Prometheus text format.
///
/// Each server owns its own registry (no global `MetricsSystem.bootstrap`), so several servers in
/// one process — as in the tests — report separately. Every method is safe from any thread.
///
/// The families follow Prometheus's conventions: base units (seconds, bytes), counts as counters
/// named `_total`, levels as gauges, and latencies as histograms whose buckets a reader turns into
/// percentiles over any interval (`histogram_quantile`; `pinwheel load` does it for its run).
public final class ServerMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory

    private let sessions: CoreMetrics.Meter
    private let bytesIn: CoreMetrics.Counter
    private let bytesOut: CoreMetrics.Counter
    private let batches: CoreMetrics.Counter
    private let workerQueue: CoreMetrics.Meter
    private let outboundBytes: CoreMetrics.Meter
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
    private let ingestHeld: CoreMetrics.FloatingPointCounter
    private let windowWait: CoreMetrics.Timer
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
        // Finer where first batches mostly fall (0.3–2 ms), so a median read from the buckets is
        // within a bucket's width of the exact one.
        factory.durationHistogramBuckets["pinwheel_viewport_first_batch_seconds"] = [
            .microseconds(100), .microseconds(200), .microseconds(300), .microseconds(400), .microseconds(500),
            .microseconds(600), .microseconds(800), .milliseconds(1), .microseconds(1250), .microseconds(1500),
            .milliseconds(2), .microseconds(2500), .milliseconds(3), .milliseconds(4), .milliseconds(5),
            .milliseconds(7), .milliseconds(10), .milliseconds(15), .milliseconds(25), .milliseconds(50),
            .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(5),
        ]
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
        ingestHeld = FloatingPointCounter(label: "pinwheel_ingest_held_seconds_total", factory: factory)
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

    /// The registry's current state in Prometheus text exposition format, then the process's CPU,
    /// memory and descriptors (`ProcessMetrics`).
    /// - Parameters:
    /// - Parameter queuedBytes: bytes waiting in every outbound queue now (the transport's count).
    public func render(queuedBytes: Int) -> String {
        outboundBytes.set(queuedBytes)
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
    func ingestHeld(_ wait: Duration) { ingestHeld.increment(by: max(0, wait / .seconds(1))) }

    /// Index thread: whether the machine is short of cores now.
    func coresShort(_ short: Bool) { coresShort.set(short ? 1 : 0) }

    func refreshPaced(every interval: Duration) { refreshInterval.set(interval / .seconds(1)) }

    /// Records the server's time from a viewport's arrival to its first batch being handed to the
    /// transport (without a wait for the client's window).
    func firstBatch(after latency: Duration) {
        // Never negative: swift-prometheus traps rendering a histogram whose sum is negative.
        firstBatch.recordNanoseconds(max(0, latency.nanoseconds))
    }
}

extension Duration {
    /// The whole duration in nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
