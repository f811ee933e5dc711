import Foundation
import PinwheelCore
import PinwheelTransport

import struct Histogram.Histogram

/// Runs a load test: opens the clients over the ramp, lets them tour for the duration, waits for the
/// last answers, reads the server's /metrics before and after, and reports.
public final class LoadRunner: Sendable {
    public let options: LoadOptions

    public init(options: LoadOptions) {
        self.options = options
    }

    /// Runs to the end; blocks the calling thread.
    /// - Parameter progress: called about once a second with the running totals (calling thread).
    /// - Throws: `LoadError` for bad options or a client that cannot start.
    public func run(progress: (LoadProgress) -> Void = { _ in }) throws(LoadError) -> LoadReport {
        try options.validate()
        let url = try Self.url(options)
        var server = ServerSideReader(url: url, enabled: options.scrapeMetrics)
        server.readBefore()
        let probe = LeavesProbe.start(options)
        let part = try tour(url: url, progress: progress) { server.readAfter() }
        var report = report(part, server: server.report())
        report.leaves = probe?.finish()
        return report
    }

    /// Runs this process's share of the clients (`options.share`) and returns what it measured, for
    /// the process that started it to merge. Blocks the calling thread.
    /// - Parameters:
    ///   - progress: called about once a second with this part's running totals (calling thread).
    ///   - whileOpen: called after the drain, before the connections close.
    func runPart(progress: (LoadProgress) -> Void, whileOpen: () -> Void) throws(LoadError) -> LoadPart {
        try options.validate()
        return try tour(url: try Self.url(options), progress: progress, whileOpen: whileOpen)
    }

    static func url(_ options: LoadOptions) throws(LoadError) -> WebSocketURL {
        do { return try WebSocketURL(options.url) } catch { throw .invalidURL(options.url) }
    }

    /// Opens this process's clients over the ramp, lets them tour for the duration, waits for the last
    /// answers, calls `whileOpen`, and closes them. With `--ingest-rate` it runs the producer too (of
    /// several processes, the first alone is given the rate).
    private func tour(
        url: WebSocketURL, progress: (LoadProgress) -> Void, whileOpen: () -> Void
    ) throws(LoadError) -> LoadPart {
        let origin = options.origin ?? "\(url.secure ? "https" : "http")://\(url.hostHeader)"
        let start = ContinuousClock.now + .milliseconds(20)
        let mine = Array(stride(from: options.share.index, to: options.clients, by: options.share.count))
        let threads = min(options.threads, mine.count)
        let acks = options.ingestRate > 0 ? AckLog() : nil
        let filters = options.filters > 0 ? LoadFilters(count: options.filters, tenants: options.tenants) : nil
        let groups = (0..<threads).map { g in
            LoadGroup(
                indices: stride(from: g, to: mine.count, by: threads).map { mine[$0] }, options: options,
                origin: origin, start: start, filters: filters)
        }
        // Still viewers run beside the producer, whose changes they are set against.
        var stillOptions = options
        stillOptions.viewportHz = 1
        stillOptions.pacing = .steady
        let stillViews = (0..<(acks == nil ? 0 : options.still)).map {
            StillStaleness.view($0, width: options.width, height: options.height)
        }
        let stillGroup =
            stillViews.isEmpty
            ? nil
            : LoadGroup(
                indices: Array(stillViews.indices), options: stillOptions, origin: origin, start: start,
                still: stillViews)
        // The probe arrives once the ramp is over, its view Europe at zoom 4, and spreads its
        // never-seen filters over the tour.
        var probeOptions = options
        probeOptions.viewportHz = 10
        probeOptions.pacing = .steady
        let probeGroup =
            options.probes > 0 && options.share.index == 0
            ? LoadGroup(
                indices: [0], options: probeOptions, origin: origin, start: start + options.ramp,
                still: [
                    TourViewport(
                        x: Mercator.x(lon: 10), y: Mercator.y(lat: 48), zoom: 4, width: options.width,
                        height: options.height)
                ], probe: options.duration / Double(options.probes + 1))
            : nil
        for group in groups + [stillGroup, probeGroup].compactMap({ $0 }) {
            do { try group.start() } catch {
                for started in groups { started.stop() }
                stillGroup?.stop()
                probeGroup?.stop()
                throw .clientFailed("\(error)")
            }
        }

        // Tour, sampling once a second.
        let tourEnd = start + options.ramp + options.duration
        let feeder = acks.map { IngestFeeder(url: url, options: options, acks: $0, until: tourEnd) }
        let steadyStart = start + options.ramp
        var samples: [LoadProgress] = []
        var previous = LoadProgress()
        var usageAtSteady: ToolUsage.Sample?
        while ContinuousClock.now < tourEnd {
            let next = min(tourEnd, ContinuousClock.now + .seconds(1))
            Thread.sleep(forTimeInterval: max(0, Self.seconds(next - ContinuousClock.now)))
            let now = ContinuousClock.now
            var sample = Self.sample(groups)
            sample.elapsed = now - start
            progress(sample)
            if now > steadyStart + .milliseconds(500) {
                if usageAtSteady == nil { usageAtSteady = ToolUsage.sample() }
                // The second before the steady part's first is the baseline of its rate.
                if samples.isEmpty { samples.append(previous) }
                samples.append(sample)
            }
            previous = sample
        }

        let tool = usageAtSteady.flatMap { a in ToolUsage.sample().map { ToolUsage.between(a, $0) } }

        // Drain: no more viewports; wait for the last answers.
        for group in groups { group.endTour() }
        let drainEnd = ContinuousClock.now + options.drainTimeout
        while ContinuousClock.now < drainEnd, groups.contains(where: { $0.inFlight > 0 }) {
            Thread.sleep(forTimeInterval: 0.02)
        }
        // Still viewers have no answer to wait for: the producer's last changes reach them by refresh,
        // so they are given the whole drain, and a change of the tour not shown by its end never was.
        if stillGroup != nil { Thread.sleep(forTimeInterval: max(0, Self.seconds(drainEnd - ContinuousClock.now))) }
        whileOpen()
        let still = (stillGroup?.state.withLock { $0.clients } ?? []).map { c in
            StillStaleness.Viewer(
                bbox: c.still!.bbox, startVersion: c.firstVersion ?? .max, arrivals: c.figures.newerData)
        }
        let ingest = feeder?.finish(still: still, deliveredBy: tourEnd)
        let elapsed = ContinuousClock.now - start
        for group in groups { group.stop() }
        stillGroup?.stop()
        probeGroup?.stop()

        let clients = groups.flatMap { g in g.state.withLock { $0.clients } }
            .map { LoadPart.Client(index: $0.index, session: $0.session, figures: $0.figures) }
            .sorted { $0.index < $1.index }
        return LoadPart(
            clients: clients, samples: samples, wireBytes: groups.reduce(0) { $0 + $1.wireBytes }, elapsed: elapsed,
            tool: tool, ingest: ingest, acknowledgements: acks?.recorded,
            probe: probeGroup?.state.withLock { $0.clients.first?.figures })
    }

    /// The report of what `part` measured, with the server's side and the producer's: each arrival of
    /// newer data at a viewer brings the changes of its versions, each a staleness sample, the time
    /// since its request was sent.
    func report(_ part: LoadPart, server: LoadReport.ServerSide?) -> LoadReport {
        var report = LoadReportBuilder(options: options, clients: part.clients).build(
            elapsed: part.elapsed, steadySeconds: part.steadySeconds, rates: part.rates, server: server,
            wireBytes: part.wireBytes)
        report.tool = part.tool
        if options.filters > 0 || options.probes > 0 {
            report.filtered = LoadReportBuilder.filtered(
                clients: part.clients, probe: part.probe, options: options, server: server)
        }
        report.ingest = part.ingest.map { summary in
            let acks = AckLog(entries: part.acknowledgements ?? [])
            var staleness = LoadReportBuilder.latencyHistogram()
            for client in part.clients {
                for arrival in client.figures.newerData {
                    for (age, changes) in acks.ages(after: arrival.from, through: arrival.version, at: arrival.at) {
                        _ = staleness.record(UInt64(LoadClient.micros(age)), count: changes)
                    }
                }
            }
            var with = summary
            with.staleness = .init(staleness, divisor: 1000)
            return with
        }
        return report
    }

    private static func sample(_ groups: [LoadGroup]) -> LoadProgress {
        var total = LoadProgress()
        for group in groups {
            group.state.withLock { s in
                // Through a buffer pointer: `for client in s.clients` copies every client, retaining
                // its arrays, while the service thread waits for the lock.
                s.clients.withUnsafeBufferPointer { clients in
                    for k in clients.indices { total.add(clients[k]) }
                }
            }
        }
        return total
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }
}

/// Per-second totals over the steady part of the run.
struct RateHistograms {
    var viewports = Self.make()
    var batches = Self.make()
    var markers = Self.make()
    var bytes = Self.make()

    mutating func record(_ now: LoadProgress, since before: LoadProgress, seconds: Double) {
        guard seconds > 0 else { return }
        func per(_ a: Int, _ b: Int) -> UInt64 { UInt64(max(0, Double(a - b) / seconds).rounded()) }
        _ = viewports.record(per(now.viewportsSent, before.viewportsSent))
        _ = batches.record(per(now.batches, before.batches))
        _ = markers.record(per(now.markers, before.markers))
        _ = bytes.record(per(now.bytes, before.bytes))
    }

    private static func make() -> Histogram<UInt64> {
        var h = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
        h.autoResize = true
        return h
    }
}
