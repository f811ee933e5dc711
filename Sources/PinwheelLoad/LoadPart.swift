import Foundation

/// What one process of a load test measured: its clients' figures and its running totals once a
/// second through the steady part. A test run as several processes (`LoadProcesses`) merges their
/// parts into one report, as if one process had run every client.
struct LoadPart: Codable {
    struct Client: Codable {
        var index: Int
        var session: String
        var figures: ClientFigures
    }

    var clients: [Client]
    /// Running totals once a second from the steady part's start: the first is the baseline of the
    /// rates, not a second of them.
    var samples: [LoadProgress]
    /// Bytes received on the wire, compressed as they came.
    var wireBytes: Int
    /// From the first connect to the end of the drain.
    var elapsed: Duration
    var tool: LoadReport.Tool?
    /// What the producer did, from the one part that ran it (`--ingest-rate`); its staleness is
    /// filled in when the report is made.
    var ingest: LoadReport.Ingest?
    /// The producer's acknowledgements, from the part that ran it: every part's clients' arrivals of
    /// newer data are set against them.
    var acknowledgements: [AckLog.Entry]?
    /// The probe viewer's figures (`--probes`), from the part that ran it.
    var probe: ClientFigures?

    /// Seconds the rates count: from the first sample to the last.
    var steadySeconds: Double {
        guard let first = samples.first, let last = samples.last else { return 0 }
        return LoadRunner.seconds(last.elapsed - first.elapsed)
    }

    /// The per-second rates between consecutive samples.
    var rates: RateHistograms {
        var rates = RateHistograms()
        for (before, now) in zip(samples, samples.dropFirst()) {
            rates.record(now, since: before, seconds: LoadRunner.seconds(now.elapsed - before.elapsed))
        }
        return rates
    }

    /// Parts of one test as one: every client, totals added second by second (over the seconds all
    /// parts sampled), the longest elapsed time, the tools' CPU together, and the producer's side
    /// from the part that ran it.
    static func merged(_ parts: [LoadPart]) -> LoadPart {
        let seconds = parts.map(\.samples.count).min() ?? 0
        let samples = (0..<seconds).map { k in
            parts.dropFirst().reduce(into: parts[0].samples[k]) { total, part in total.add(part.samples[k]) }
        }
        let tools = parts.compactMap(\.tool)
        return LoadPart(
            clients: parts.flatMap(\.clients).sorted { $0.index < $1.index }, samples: samples,
            wireBytes: parts.reduce(0) { $0 + $1.wireBytes }, elapsed: parts.map(\.elapsed).max() ?? .zero,
            tool: tools.isEmpty ? nil : ToolUsage.together(tools), ingest: parts.lazy.compactMap(\.ingest).first,
            acknowledgements: parts.lazy.compactMap(\.acknowledgements).first,
            probe: parts.lazy.compactMap(\.probe).first)
    }
}
