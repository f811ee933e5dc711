import PinwheelTransport

/// Reads the target's /metrics before and after a run and turns the difference into the server's
/// CPU and memory per session.
struct ServerSideReader {
    let host: String
    let port: Int
    let enabled: Bool
    private var before: MetricsScrape?
    private var after: MetricsScrape?
    private var failure: String?

    init(url: WebSocketURL, enabled: Bool) {
        host = url.host
        port = url.port
        // A raw socket cannot speak TLS; a wss target is measured from the client side only.
        self.enabled = enabled && !url.secure
        if enabled && url.secure { failure = "not read: /metrics over TLS is not supported by pinwheel load" }
    }

    var metricsURL: String { "http://\(host):\(port)/metrics" }

    mutating func readBefore() {
        guard enabled else { return }
        do { before = try MetricsScrape.fetch(host: host, port: port) } catch { failure = error.description }
    }

    mutating func readAfter() {
        guard enabled, before != nil else { return }
        do { after = try MetricsScrape.fetch(host: host, port: port) } catch { failure = error.description }
    }

    func report() -> LoadReport.ServerSide? {
        guard enabled || failure != nil else { return nil }
        var side = LoadReport.ServerSide(metricsURL: metricsURL, error: failure)
        guard let before, let after else { return side }
        side.sessionsBefore = before.value("pinwheel_sessions")
        side.sessionsAfter = after.value("pinwheel_sessions")
        if let cpu0 = before.value("process_cpu_seconds_total"), let cpu1 = after.value("process_cpu_seconds_total") {
            side.cpuSeconds = cpu1 - cpu0
            let wall = LoadRunner.seconds(after.at - before.at)
            if wall > 0 { side.cpuPercent = 100 * (cpu1 - cpu0) / wall }
        }
        side.rssBeforeBytes = before.value("process_resident_memory_bytes")
        side.rssAfterBytes = after.value("process_resident_memory_bytes")
        if let v0 = before.value("pinwheel_data_version"), let v1 = after.value("pinwheel_data_version") {
            side.dataChanged = v1 != v0
        }
        // While the data changes the growth holds the index's newer versions too, not only sessions.
        if let r0 = side.rssBeforeBytes, let r1 = side.rssAfterBytes, let s0 = side.sessionsBefore,
            let s1 = side.sessionsAfter, s1 > s0, side.dataChanged != true
        {
            side.rssPerSessionBytes = (r1 - r0) / (s1 - s0)
        }
        let within = #"pinwheel_viewport_first_batch_seconds_bucket{le="0.005"}"#
        let count = "pinwheel_viewport_first_batch_seconds_count"
        if let w0 = before.value(within), let w1 = after.value(within), let c0 = before.value(count),
            let c1 = after.value(count), c1 > c0
        {
            side.firstBatchCount = c1 - c0
            side.firstBatchWithin5msPercent = 100 * (w1 - w0) / (c1 - c0)
            side.cpuPerViewportMicros = side.cpuSeconds.map { 1e6 * $0 / (c1 - c0) }
        }
        if let w0 = before.value("pinwheel_viewport_window_wait_seconds_count"),
            let w1 = after.value("pinwheel_viewport_window_wait_seconds_count")
        {
            side.windowWaits = w1 - w0
        }
        // The run's own first batches: the difference of the two readings' buckets.
        let firstBatch = "pinwheel_viewport_first_batch_seconds"
        side.firstBatchP50Ms = after.quantile(0.5, of: firstBatch, since: before).map { $0 * 1000 }
        side.firstBatchP99Ms = after.quantile(0.99, of: firstBatch, since: before).map { $0 * 1000 }
        side.filterIndexes = after.value("pinwheel_filter_indexes")
        side.filterIndexBytes = after.value("pinwheel_filter_index_bytes")
        side.filterIndexPoints = after.value("pinwheel_filter_index_points")
        side.indexBytes = after.value("pinwheel_index_bytes")
        side.indexPoints = after.value("pinwheel_index_points")
        if side.cpuSeconds == nil || side.rssBeforeBytes == nil {
            side.error = "the server's /metrics has no process_cpu_seconds_total or process_resident_memory_bytes"
        }
        return side
    }
}
