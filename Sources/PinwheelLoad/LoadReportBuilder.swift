import struct Histogram.Histogram

/// Turns the clients' figures into a `LoadReport`: HDR histograms over every sample, sums, and
/// one summary per client.
struct LoadReportBuilder {
    let options: LoadOptions
    let clients: [LoadPart.Client]

    func build(
        elapsed: Duration, steadySeconds: Double, rates: RateHistograms, server: LoadReport.ServerSide?,
        wireBytes: Int = 0
    ) -> LoadReport {
        var connect = Self.latencyHistogram()
        var firstBatch = Self.latencyHistogram()
        var done = Self.latencyHistogram()
        var totals = LoadReport.Totals(
            connected: 0, failedToConnect: 0, viewportsSent: 0, viewportsAnswered: 0, viewportsSuperseded: 0,
            viewportsUnanswered: 0, batches: 0, markers: 0, features: 0, bytes: 0, bytesPerMarker: 0,
            wireBytes: wireBytes, wireBytesPerMarker: 0, naiveBytes: 0, bytesPercentOfNaive: 0, presenceMessages: 0)
        var closes: [String: Int] = [:]
        var closesDuringRun: [String: Int] = [:]
        var errors: [String: Int] = [:]
        var clientP99 = Self.latencyHistogram()
        var clientBytes = Histogram<UInt64>(numberOfSignificantValueDigits: .three)
        clientBytes.autoResize = true
        let seconds = max(0.001, LoadRunner.seconds(elapsed))
        var perClient: [LoadReport.Client] = []
        perClient.reserveCapacity(clients.count)

        for client in clients {
            let f = client.figures
            if let micros = f.connectMicros {
                _ = connect.record(UInt64(micros))
                totals.connected += 1
            } else {
                totals.failedToConnect += 1
            }
            var clientFirst = Self.latencyHistogram()
            var clientDone = Self.latencyHistogram()
            for v in f.firstBatchMicros {
                _ = firstBatch.record(UInt64(v))
                _ = clientFirst.record(UInt64(v))
            }
            for v in f.doneMicros {
                _ = done.record(UInt64(v))
                _ = clientDone.record(UInt64(v))
            }
            if clientDone.totalCount > 0 { _ = clientP99.record(clientDone.valueAtPercentile(99)) }
            _ = clientBytes.record(UInt64((Double(f.bytes) / seconds).rounded()))
            totals.viewportsSent += f.viewportsSent
            totals.viewportsAnswered += f.answered
            totals.viewportsSuperseded += f.superseded
            totals.viewportsUnanswered += f.unanswered
            totals.batches += f.batches
            totals.markers += f.markers
            totals.features += f.features
            totals.bytes += f.bytes
            totals.naiveBytes += f.naiveBytes
            totals.presenceMessages += f.presenceMessages
            if let code = f.closeCode {
                closes[String(code), default: 0] += 1
                if f.closedDuringRun { closesDuringRun[String(code), default: 0] += 1 }
            }
            var clientErrors = f.errors
            if f.unanswered > 0 { clientErrors["viewport without done", default: 0] += f.unanswered }
            for (key, n) in clientErrors { errors[key, default: 0] += n }
            perClient.append(
                LoadReport.Client(
                    index: client.index, session: client.session,
                    connectMs: f.connectMicros.map { Double($0) / 1000 }, viewportsSent: f.viewportsSent,
                    viewportsAnswered: f.answered, viewportsSuperseded: f.superseded,
                    viewportsUnanswered: f.unanswered, batches: f.batches, markers: f.markers, bytes: f.bytes,
                    naiveBytes: f.naiveBytes, firstBatchMs: .init(clientFirst, divisor: 1000),
                    doneMs: .init(clientDone, divisor: 1000), closeCode: f.closeCode.map(Int.init),
                    errors: clientErrors))
        }
        totals.bytesPercentOfNaive = totals.naiveBytes > 0 ? 100 * Double(totals.bytes) / Double(totals.naiveBytes) : 0
        if totals.features > 0 {
            totals.bytesPerMarker = Double(totals.bytes) / Double(totals.features)
            totals.wireBytesPerMarker = Double(totals.wireBytes) / Double(totals.features)
        }

        let run = LoadReport.Run(
            url: options.url, clients: options.clients, durationSeconds: LoadRunner.seconds(options.duration),
            rampSeconds: LoadRunner.seconds(options.ramp), viewportHz: options.viewportHz,
            trace: options.trace.rawValue, pacing: options.pacing.rawValue, gestureHz: options.gestureHz,
            seed: options.seed, threads: options.threads, processes: options.processes, deflate: options.deflate,
            encoding: options.encoding.rawValue,
            elapsedSeconds: LoadRunner.seconds(elapsed), steadySeconds: steadySeconds)
        return LoadReport(
            run: run, totals: totals,
            latency: .init(
                connect: .init(connect, divisor: 1000), firstBatch: .init(firstBatch, divisor: 1000),
                done: .init(done, divisor: 1000)),
            rates: .init(
                viewports: .init(rates.viewports, divisor: 1), batches: .init(rates.batches, divisor: 1),
                markers: .init(rates.markers, divisor: 1), bytes: .init(rates.bytes, divisor: 1)),
            perClient: .init(doneP99: .init(clientP99, divisor: 1000), bytesPerSecond: .init(clientBytes, divisor: 1)),
            closes: closes, closesDuringRun: closesDuringRun, errors: errors, server: server, clients: perClient)
    }

    /// What the filtered viewers and the probe measured, with the server's filtered indexes.
    static func filtered(
        clients: [LoadPart.Client], probe: ClientFigures?, options: LoadOptions, server: LoadReport.ServerSide?
    ) -> LoadReport.Filtered {
        var warm = latencyHistogram()
        var neverSeen = latencyHistogram()
        var checked = 0
        var violations = 0
        var example: String?
        var viewers = 0
        var shares: [Double] = []
        let total = server?.indexPoints
        for f in clients.map(\.figures) + [probe].compactMap({ $0 }) {
            for v in f.warmFirstBatchMicros { _ = warm.record(UInt64(v)) }
            for v in f.probeMicros { _ = neverSeen.record(UInt64(v)) }
            checked += f.pointsChecked
            violations += f.scopeViolations
            example =
                example ?? f.firstViolation.map { f.probeMicros.isEmpty ? "a viewer's \($0)" : "the probe's \($0)" }
            if f.filterKey != nil && f.probeMicros.isEmpty { viewers += 1 }
            if let points = f.filteredPoints, let total, total > 0 { shares.append(Double(points) / total) }
        }
        var allowed: Double?
        if let s = server, let bytes = s.indexBytes, let points = s.indexPoints, points > 0,
            let held = s.filterIndexPoints, let indexes = s.filterIndexes
        {
            allowed = held / points * bytes + indexes * 1_048_576
        }
        return LoadReport.Filtered(
            filters: options.filters, viewers: viewers, shareMin: shares.min(), shareMax: shares.max(),
            warmFirstBatchMs: .init(warm, divisor: 1000), neverSeenFirstBatchMs: .init(neverSeen, divisor: 1000),
            probesSent: probe?.probeMicros.count ?? 0, pointsChecked: checked, scopeViolations: violations,
            firstViolation: example,
            indexBytes: server?.filterIndexBytes, allowedBytes: allowed, probeErrors: probe?.errors ?? [:])
    }

    /// Microseconds from 1 µs to 10 minutes, three significant digits.
    static func latencyHistogram() -> Histogram<UInt64> {
        Histogram(highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three)
    }
}
