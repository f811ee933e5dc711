import Foundation

/// The human-readable report, laid out like the load tools people know (wrk, k6): one row per
/// measure with count, mean and percentiles, then totals, closes, errors and the server's side.
public enum LoadTable {
    /// The whole report as text, ending with a newline.
    public static func render(_ report: LoadReport) -> String {
        let r = report.run
        var out = "pinwheel load \(r.url): \(r.clients) clients, \(number(r.durationSeconds)) s after a "
        out += "\(number(r.rampSeconds)) s ramp, trace \(r.trace), \(number(r.viewportHz)) viewports/s"
        if r.pacing == TourPacing.people.rawValue {
            out += " on average (bursts at \(number(r.gestureHz))/s while people drag or zoom)"
        }
        out += ", seed \(r.seed)" + (r.processes > 1 ? ", \(r.processes) tool processes\n" : "\n")
        out += "elapsed \(fixed(r.elapsedSeconds, 1)) s, rates over \(fixed(r.steadySeconds, 1)) steady s\n\n"
        out +=
            pad("", 18) + ["count", "mean", "p50", "p90", "p99", "p99.9", "max"].map { padLeft($0, 10) }.joined() + "\n"
        out += row("connect (ms)", report.latency.connect, digits: 2)
        out += row("first batch (ms)", report.latency.firstBatch, digits: 2)
        out += row("done (ms)", report.latency.done, digits: 2)
        if let f = report.filtered {
            out += row("  warm filter (ms)", f.warmFirstBatchMs, digits: 2)
            out += row("  never seen (ms)", f.neverSeenFirstBatchMs, digits: 2)
        }
        if let staleness = report.ingest?.staleness { out += row("staleness (ms)", staleness, digits: 2) }
        if let still = report.ingest?.stillStaleness { out += row("  still (ms)", still, digits: 2) }
        if let answers = report.ingest?.answerMs { out += row("ingest answer (ms)", answers, digits: 2) }
        if let leaves = report.leaves { out += row("leaves page (ms)", leaves.pageMs, digits: 2) }
        out += row("viewports/s", report.rates.viewports, digits: nil)
        out += row("batches/s", report.rates.batches, digits: nil)
        out += row("markers/s", report.rates.markers, digits: nil)
        out += row("bytes/s", report.rates.bytes, digits: nil)
        out += "per client\n"
        out += row("  done p99 (ms)", report.perClient.doneP99, digits: 2)
        out += row("  bytes/s", report.perClient.bytesPerSecond, digits: nil)

        let t = report.totals
        out += "\nviewports   sent \(t.viewportsSent), answered \(t.viewportsAnswered), "
        out += "superseded \(t.viewportsSuperseded), unanswered \(t.viewportsUnanswered)\n"
        out += "received    \(t.batches) batches, \(t.markers) markers, \(compact(Double(t.bytes)))B"
        out +=
            " = \(fixed(t.bytesPercentOfNaive, 1)) % of re-sending every visible feature (\(compact(Double(t.naiveBytes)))B)\n"
        out += "per marker  \(fixed(t.bytesPerMarker, 1)) B of batch payload, "
        out += "\(fixed(t.wireBytesPerMarker, 1)) B on the wire "
        out += "(\(t.features) features added or updated, \(r.encoding), deflate \(r.deflate ? "on" : "off"))\n"
        out += "connections \(t.connected) opened, \(t.failedToConnect) failed\n"
        out += "closes      \(codes(report.closes)); during the run: \(codes(report.closesDuringRun))\n"
        out += "errors      \(report.errors.isEmpty ? "none" : codes(report.errors))\n"
        if let i = report.ingest {
            out += "ingest      \(i.accepted) changes accepted in \(i.requests) requests (\(number(i.rate))/s asked), "
            out += "\(i.rejected) rejected\(i.error.map { "; stopped: \($0)" } ?? "")\n"
            if let gap = i.stillLongestGapMs, let undelivered = i.stillUndelivered {
                out += "still       longest wait for an update while a change waited \(fixed(gap, 0)) ms, "
                out += "\(undelivered) changes never shown\n"
            }
        }
        if let f = report.filtered { out += filtered(f) }
        if let l = report.leaves, !l.refused.isEmpty || l.error != nil {
            out += "leaves      refused: \(l.refused.isEmpty ? "none" : codes(l.refused))"
            out += "\(l.error.map { "; stopped: \($0)" } ?? "")\n"
        }
        if let s = report.server {
            out += "server      " + server(s) + "\n"
            if let latency = serverLatency(s) { out += "            " + latency + "\n" }
        }
        if let tool = report.tool {
            out += "tool        CPU \(fixed(tool.cpuPercent, 1)) % of a core, busiest thread "
            out += "\(fixed(tool.busiestThreadPercent, 1)) %; machine \(fixed(tool.machineIdlePercent, 1)) % idle "
            out += "(\(tool.cores) cores)\n"
            for warning in tool.warnings { out += "WARNING     \(warning)\n" }
        }
        return out
    }

    /// The filtered mode's lines: filters, the scope check, the filtered indexes' bytes.
    private static func filtered(_ f: LoadReport.Filtered) -> String {
        var out = "filters     \(f.filters) distinct over \(f.viewers) viewers"
        if let low = f.shareMin, let high = f.shareMax {
            out += ", each letting \(fixed(low * 100, 1)) to \(fixed(high * 100, 1)) % of the points through"
        }
        out += "; \(f.probesSent) never-seen filters probed"
        out += f.probeErrors.isEmpty ? "\n" : " (probe errors: \(codes(f.probeErrors)))\n"
        out += "scope       \(f.pointsChecked) points received checked against their viewer's filter, "
        out += "\(f.scopeViolations) outside it\n"
        if let example = f.firstViolation { out += "            first outside: \(example)\n" }
        if let bytes = f.indexBytes, let allowed = f.allowedBytes {
            out += "filter mem  \(compact(bytes))B in the filtered indexes; their share of the full index's plus "
            out += "1 MB each: \(compact(allowed))B (\(bytes <= allowed ? "within" : "OVER"))\n"
        }
        return out
    }

    /// 1234 → "1.2k", 5_600_000 → "5.6M".
    public static func compact(_ value: Double) -> String {
        let units: [(Double, String)] = [(1e9, "G"), (1e6, "M"), (1e3, "k")]
        for (scale, suffix) in units where value.magnitude >= scale {
            return fixed(value / scale, 1) + suffix
        }
        return fixed(value, value == value.rounded() ? 0 : 1)
    }

    /// The server's own viewport → first batch, when its /metrics has it.
    private static func serverLatency(_ s: LoadReport.ServerSide) -> String? {
        guard let within = s.firstBatchWithin5msPercent, let count = s.firstBatchCount else { return nil }
        var line = "first batch within 5 ms: \(fixed(within, 2)) % of \(Int(count))"
        if let p50 = s.firstBatchP50Ms, let p99 = s.firstBatchP99Ms {
            line += " (p50 \(fixed(p50, 2)) ms, p99 \(fixed(p99, 2)) ms over the run, from its histogram)"
        }
        if let waits = s.windowWaits { line += "; \(Int(waits)) waited for the client's window" }
        return line
    }

    private static func server(_ s: LoadReport.ServerSide) -> String {
        var parts: [String] = []
        if let cpu = s.cpuPercent, let seconds = s.cpuSeconds {
            parts.append("CPU \(fixed(cpu, 1)) % of a core (\(fixed(seconds, 1)) s)")
        }
        if let perViewport = s.cpuPerViewportMicros {
            parts.append("\(fixed(perViewport, 1)) µs of CPU per viewport served")
        }
        if let r0 = s.rssBeforeBytes, let r1 = s.rssAfterBytes {
            parts.append("RSS \(compact(r0))B → \(compact(r1))B")
        }
        if let perSession = s.rssPerSessionBytes {
            parts.append("\(compact(perSession))B per session")
        } else if s.dataChanged == true {
            parts.append("not per session: the data changed, and the index with it")
        }
        if let s0 = s.sessionsBefore, let s1 = s.sessionsAfter {
            parts.append("sessions \(Int(s0)) → \(Int(s1))")
        }
        if let error = s.error { parts.append(error) }
        return parts.joined(separator: ", ")
    }

    private static func row(_ name: String, _ s: LoadReport.Summary, digits: Int?) -> String {
        let values = [s.mean, s.p50, s.p90, s.p99, s.p99_9, s.max].map { v in
            padLeft(digits.map { fixed(v, $0) } ?? compact(v), 10)
        }
        return pad(name, 18) + padLeft(String(s.count), 10) + values.joined() + "\n"
    }

    private static func codes(_ counts: [String: Int]) -> String {
        counts.isEmpty
            ? "none" : counts.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")
    }

    private static func fixed(_ value: Double, _ digits: Int) -> String {
        String(format: "%.\(digits)f", value)
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value)
    }

    private static func pad(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : s + String(repeating: " ", count: width - s.count)
    }

    private static func padLeft(_ s: String, _ width: Int) -> String {
        s.count >= width ? s : String(repeating: " ", count: width - s.count) + s
    }
}
