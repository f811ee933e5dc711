import Testing

@testable import PinwheelLoad
@testable import PinwheelServer

@Suite("Server-side figures for pinwheel load")
struct LoadMetricsTests {
    @Test("Prometheus text parses by series, with labels holding spaces and timestamps ignored")
    func parse() {
        let text = """
            # HELP pinwheel_sessions Sessions.
            # TYPE pinwheel_sessions gauge
            pinwheel_sessions 12
            pinwheel_closes_total{code="1000"} 3
            pinwheel_closes_total{code="1008",reason="a b"} 2 1700000000
            process_cpu_seconds_total 1.5e1
            broken_line
            """
        let scrape = MetricsScrape.parse(text)
        #expect(scrape.value("pinwheel_sessions") == 12)
        #expect(scrape.values[#"pinwheel_closes_total{code="1008",reason="a b"}"#] == 2)
        #expect(scrape.value("pinwheel_closes_total") == 5)
        #expect(scrape.value("process_cpu_seconds_total") == 15)
        #expect(scrape.value("missing") == nil)
    }

    @Test("a histogram's median and p99 over a run come from the difference of two readings' buckets")
    func histogramQuantiles() {
        let metrics = ServerMetrics()
        // Before the run: 100 slow first batches that the run's figures must leave out.
        for _ in 0..<100 { metrics.firstBatch(after: .milliseconds(40)) }
        let before = MetricsScrape.parse(metrics.render(queuedBytes: 0))
        // The run: 1,000 first batches spread evenly over 0.5–1.5 ms, and 20 at 12 ms.
        var samples: [Double] = []
        for k in 0..<1000 { samples.append(0.5 + Double(k) / 1000) }
        samples += Array(repeating: 12, count: 20)
        for ms in samples { metrics.firstBatch(after: .microseconds(Int64(ms * 1000))) }
        let after = MetricsScrape.parse(metrics.render(queuedBytes: 0))
        let name = "pinwheel_viewport_first_batch_seconds"
        let sorted = samples.sorted()
        let p50 = sorted[sorted.count / 2] / 1000
        let p99 = sorted[Int(Double(sorted.count) * 0.99)] / 1000
        // Within the width of the bucket each falls in (0.8–1 ms and 10–15 ms).
        #expect(abs(after.quantile(0.5, of: name, since: before)! - p50) <= 0.0002)
        #expect(abs(after.quantile(0.99, of: name, since: before)! - p99) <= 0.005)
        // Without the earlier reading, the slow ones count: p99 lands in their bucket.
        #expect(after.quantile(0.99, of: name)! > 0.025)
        #expect(before.quantile(0.5, of: name, since: before) == nil)
        #expect(after.quantile(0.5, of: "missing") == nil)
    }

    @Test("a quantile in the +Inf bucket is the largest finite bound")
    func quantileBeyondBuckets() {
        let text = """
            h_bucket{le="0.1"} 1
            h_bucket{le="1.0"} 2
            h_bucket{le="+Inf"} 10
            """
        let scrape = MetricsScrape.parse(text)
        #expect(scrape.quantile(0.05, of: "h") == 0.05)
        #expect(scrape.quantile(0.99, of: "h") == 1.0)
    }

    @Test("this process's CPU, RSS and descriptors come from /proc/self and read back from their text")
    func processMetrics() throws {
        var sink = 0.0
        for k in 0..<2_000_000 { sink += Double(k).squareRoot() }
        #expect(sink > 0)
        let now = try #require(ProcessMetrics.current())
        #expect(now.cpuSeconds > 0)
        #expect(now.residentBytes > 1 << 20)
        #expect(now.virtualBytes >= now.residentBytes)
        #expect(now.openDescriptors >= 3)
        let scrape = MetricsScrape.parse(now.prometheusText)
        #expect(scrape.value("process_resident_memory_bytes") == Double(now.residentBytes))
        #expect(scrape.value("process_cpu_seconds_total") == now.cpuSeconds)
        #expect(scrape.value("process_open_fds") == Double(now.openDescriptors))
    }

    @Test("the server's /metrics text ends with the process figures")
    func serverMetricsCarryProcess() {
        let text = ServerMetrics().render(queuedBytes: 0)
        let scrape = MetricsScrape.parse(text)
        #expect((scrape.value("process_resident_memory_bytes") ?? 0) > 0)
        #expect(scrape.value("process_cpu_seconds_total") != nil)
    }

    @Test("a saturated tool thread and a machine without idle CPU are each reported as a warning")
    func toolWarnings() {
        let ticks = ToolUsage.ticksPerSecond
        let start = ContinuousClock.now
        let a = ToolUsage.Sample(at: start, threadTicks: [1: 0, 2: 0], machineIdle: 0, machineTotal: 0)
        // Over two seconds: thread 1 used 1.9 s, thread 2 0.2 s; the machine was 5 % idle.
        let busy = ToolUsage.Sample(
            at: start + .seconds(2), threadTicks: [1: 1.9 * ticks, 2: 0.2 * ticks], machineIdle: 20, machineTotal: 400)
        let saturated = ToolUsage.between(a, busy)
        #expect(abs(saturated.busiestThreadPercent - 95) < 0.01 && abs(saturated.cpuPercent - 105) < 0.01)
        #expect(abs(saturated.machineIdlePercent - 5) < 0.01)
        #expect(saturated.warnings.count == 2)
        #expect(saturated.warnings.first?.contains("95 % of a core") == true)
        let calm = ToolUsage.Sample(
            at: start + .seconds(2), threadTicks: [1: 0.5 * ticks, 2: 0.2 * ticks], machineIdle: 200, machineTotal: 400)
        #expect(ToolUsage.between(a, calm).warnings.isEmpty)
    }

    @Test("large numbers print compactly: 1.2k, 5.6M")
    func tableNumbers() {
        #expect(LoadTable.compact(999) == "999")
        #expect(LoadTable.compact(1234) == "1.2k")
        #expect(LoadTable.compact(5_600_000) == "5.6M")
        #expect(LoadTable.compact(2.5) == "2.5")
    }

    @Test("options outside their range are refused naming the option")
    func options() {
        var options = LoadOptions(url: "ws://127.0.0.1:1/")
        options.clients = 0
        #expect(throws: LoadError.invalidOption(name: "clients", value: "0", expected: "at least 1")) {
            try options.validate()
        }
        options.clients = 1
        options.eventLoop = .libev
        options.threads = 2
        #expect(throws: LoadError.self) { try options.validate() }
        options.threads = 1
        #expect(throws: Never.self) { try options.validate() }
    }

    @Test("without --processes: one process per 5,000 viewports a second, 2,500 beside a producer, up to the cores")
    func automaticProcesses() {
        var options = LoadOptions(url: "ws://127.0.0.1:1/")
        options.eventLoop = .libev
        options.clients = 10_000
        options.viewportHz = 1
        #expect(options.automaticProcesses(cores: 2) == 2)
        #expect(options.automaticProcesses(cores: 1) == 1)
        options.clients = 1_000
        options.viewportHz = 10
        #expect(options.automaticProcesses(cores: 2) == 2)
        options.viewportHz = 5
        #expect(options.automaticProcesses(cores: 2) == 1)
        options.clients = 40_000
        options.viewportHz = 1
        #expect(options.automaticProcesses(cores: 16) == 8)
        options.viewportHz = 0
        #expect(options.automaticProcesses(cores: 16) == 1)
        options.clients = 500
        options.viewportHz = 10
        #expect(options.automaticProcesses(cores: 16) == 1)
        options.ingestRate = 1_000
        #expect(options.automaticProcesses(cores: 16) == 2)
        options.clients = 250
        #expect(options.automaticProcesses(cores: 16) == 1)
        options.ingestRate = 0
        options.eventLoop = .poll
        #expect(options.automaticProcesses(cores: 16) == 1)
    }
}

@Suite("What a naive server would send")
struct LoadNaiveBytesTests {
    @Test("one batch holding every visible feature: envelope, features and commas, byte for byte")
    func naiveBatch() {
        let features = [#"{"id":1,"lat":1,"lon":2,"count":1}"#, #"{"id":22,"lat":3,"lon":4,"count":5}"#]
        let message =
            #"{"type":"batch","seq":17,"batch":305,"remove":[],"add":["# + features.joined(separator: ",")
            + #"],"update":[],"done":true}"#
        #expect(
            LoadClient.naiveBatchBytes(
                seq: 17, batch: 305, featureBytes: features.map(\.utf8.count).reduce(0, +), features: 2)
                == message.utf8.count)
    }
}
