import Testing

@testable import PinwheelServer

@Suite("Server metrics")
struct ServerMetricsTests {
    @Test("counters, gauges and the latency histogram render in Prometheus text format")
    func rendersPrometheusText() {
        let metrics = ServerMetrics()
        metrics.sessionOpened()
        metrics.received(type: "viewport", bytes: 120)
        metrics.sent(type: "batch", bytes: 900)
        metrics.firstBatch(after: .microseconds(700))
        metrics.sessionClosed(code: 1001)
        let text = metrics.render(queuedBytes: 4096)
        #expect(text.contains("pinwheel_sessions 0"))
        #expect(text.contains(#"pinwheel_messages_in_total{type="viewport"} 1"#))
        #expect(text.contains(#"pinwheel_messages_out_total{type="batch"} 1"#))
        #expect(text.contains("pinwheel_bytes_out_total 900"))
        #expect(text.contains("pinwheel_batches_total 1"))
        #expect(text.contains(#"pinwheel_closes_total{code="1001"} 1"#))
        #expect(text.contains(#"pinwheel_viewport_first_batch_seconds_bucket{le="0.0008"} 1"#))
        #expect(text.contains(#"pinwheel_viewport_first_batch_seconds_bucket{le="0.0006"} 0"#))
        #expect(text.contains(#"pinwheel_queue_depth{queue="outbound_bytes"} 4096"#))
    }

    @Test(
        "every family has HELP and TYPE, counters end in _total, and latencies are histograms, not percentile gauges"
    )
    func prometheusConventions() {
        let metrics = ServerMetrics()
        metrics.firstBatch(after: .milliseconds(1))
        metrics.ingestHeld(.milliseconds(1500))
        let text = metrics.render(queuedBytes: 0)
        let lines = text.split(separator: "\n")
        var types: [Substring: Substring] = [:]
        for line in lines where line.hasPrefix("# TYPE ") {
            let parts = line.split(separator: " ")
            types[parts[2]] = parts[3]
        }
        let helped = Set(lines.filter { $0.hasPrefix("# HELP ") }.map { $0.split(separator: " ")[2] })
        #expect(Set(types.keys) == helped)
        for (name, type) in types {
            #expect((type == "counter") == name.hasSuffix("_total"), "\(name) is a \(type)")
            #expect(!name.contains("_p50") && !name.contains("_p99") && !name.contains("_max"), "\(name)")
        }
        // Every sample belongs to a family that was declared.
        for line in lines where !line.hasPrefix("#") && !line.isEmpty {
            let series = line.prefix { $0 != "{" && $0 != " " }
            let family = ["_bucket", "_sum", "_count"].reduce(series) { name, suffix in
                types[name] == nil && name.hasSuffix(suffix) ? name.dropLast(suffix.count) : name
            }
            #expect(types[family] != nil, "\(series) has no TYPE")
        }
        #expect(types["pinwheel_viewport_first_batch_seconds"] == "histogram")
        #expect(text.contains("pinwheel_ingest_held_seconds_total 1.5"))
    }

    @Test("a negative duration (clocks read on two threads) is recorded as zero and still renders")
    func negativeDurationsRender() {
        let metrics = ServerMetrics()
        metrics.windowWait(.microseconds(-30))
        metrics.firstBatch(after: .microseconds(-5))
        let text = metrics.render(queuedBytes: 0)
        #expect(text.contains("pinwheel_viewport_window_wait_seconds_count 1"))
        #expect(text.contains(#"pinwheel_viewport_window_wait_seconds_bucket{le="0.00025"} 1"#))
        #expect(text.contains(#"pinwheel_viewport_first_batch_seconds_bucket{le="0.0001"} 1"#))
    }

    @Test("every family at /metrics has a HELP line right before its TYPE line")
    func everyFamilyHasHelp() {
        let metrics = ServerMetrics()
        metrics.sessionClosed(code: 1000)
        metrics.datasetLoaded(points: 10, unlocated: 1, skipped: 2)
        let lines = metrics.render(queuedBytes: 0).split(separator: "\n")
        let types = lines.indices.filter { lines[$0].hasPrefix("# TYPE ") }
        #expect(types.count >= 25)
        for k in types {
            let name = lines[k].split(separator: " ")[2]
            #expect(k > 0 && lines[k - 1].hasPrefix("# HELP \(name) "), "\(name) has no HELP line")
        }
    }

    @Test("a family with several label sets gets one HELP line, and one given already is kept")
    func helpOncePerFamily() {
        let text = """
            # TYPE pinwheel_queue_depth gauge
            pinwheel_queue_depth{queue="workers"} 0
            pinwheel_queue_depth{queue="outbound_bytes"} 0
            # HELP pinwheel_sessions Given already.
            # TYPE pinwheel_sessions gauge
            pinwheel_sessions 1

            """
        let added = MetricHelp.adding(to: text)
        #expect(added.hasPrefix("# HELP pinwheel_queue_depth Work waiting"))
        #expect(added.components(separatedBy: "# HELP").count == 3)
        #expect(added.hasSuffix("pinwheel_sessions 1\n"))
    }
}
