import struct Histogram.Histogram

/// What a load run measured: the whole run, the server's side, and every client.
public struct LoadReport: Codable, Sendable {
    /// Percentiles of one measure, in milliseconds (latencies) or per second (rates).
    public struct Summary: Codable, Sendable, Equatable {
        public var count: UInt64
        public var mean: Double
        public var p50: Double
        public var p90: Double
        public var p99: Double
        // swift-format-ignore: AlwaysUseLowerCamelCase
        // The name is a key of `pinwheel load --json`'s report.
        public var p99_9: Double
        public var max: Double

        /// From a histogram whose values are in `unit`s of the summary (e.g. 1000 for µs → ms).
        init(_ histogram: Histogram<UInt64>, divisor: Double) {
            count = histogram.totalCount
            guard count > 0 else {
                mean = 0
                p50 = 0
                p90 = 0
                p99 = 0
                p99_9 = 0
                max = 0
                return
            }
            mean = histogram.mean / divisor
            p50 = Double(histogram.valueAtPercentile(50)) / divisor
            p90 = Double(histogram.valueAtPercentile(90)) / divisor
            p99 = Double(histogram.valueAtPercentile(99)) / divisor
            p99_9 = Double(histogram.valueAtPercentile(99.9)) / divisor
            max = Double(histogram.max) / divisor
        }
    }

    /// What the producer beside the clients did (`--ingest-rate`), and how stale the viewers' data was.
    public struct Ingest: Codable, Sendable {
        /// Changes per second asked for.
        public var rate: Double
        public var requests: Int
        public var accepted: Int
        public var rejected: Int
        /// Request → durable answer, milliseconds.
        public var answerMs: Summary
        /// At the touring viewers, milliseconds: for every change of the versions a batch brought a
        /// viewer, the time from just before its request was sent to the batch's arrival.
        public var staleness: Summary?
        /// At the still viewers (`--still`), milliseconds: every change in a still viewer's view, from
        /// just before its request was sent to the arrival of the first batch holding it
        /// (``StillStaleness``).
        public var stillStaleness: Summary?
        /// The longest a still viewer went without an update while a change in its view waited.
        public var stillLongestGapMs: Double?
        /// Changes in a still viewer's view, sent at least a second before the tour ended, that never
        /// reached it.
        public var stillUndelivered: Int?
        /// Why the producer stopped early, if it did.
        public var error: String?
    }

    /// The options of the run.
    public struct Run: Codable, Sendable {
        public var url: String
        public var clients: Int
        public var durationSeconds: Double
        public var rampSeconds: Double
        public var viewportHz: Double
        public var trace: String
        /// `steady`, or `people` (bursts at `gestureHz`, `viewportHz` on average).
        public var pacing: String
        public var gestureHz: Double
        public var seed: UInt64
        public var threads: Int
        /// Processes of the tool that shared the clients.
        public var processes: Int
        /// Whether the clients offered permessage-deflate.
        public var deflate: Bool
        /// The subprotocol asked for: `pinwheel.v1` (JSON) or `pinwheel.v1+bin`.
        public var encoding: String
        /// Wall time from the first connect to the end of the drain.
        public var elapsedSeconds: Double
        /// Seconds counted for the rates: after the ramp, before the drain.
        public var steadySeconds: Double
    }

    /// Sums over every client.
    public struct Totals: Codable, Sendable {
        public var connected: Int
        public var failedToConnect: Int
        public var viewportsSent: Int
        /// Viewports answered by their own `done`.
        public var viewportsAnswered: Int
        /// Viewports the server replaced by a later one (it serves the latest).
        public var viewportsSuperseded: Int
        /// Viewports with neither when the run ended.
        public var viewportsUnanswered: Int
        public var batches: Int
        public var markers: Int
        /// Features added or updated (markers without the removes).
        public var features: Int
        /// Batch payload bytes received (after inflation).
        public var bytes: Int
        /// bytes ÷ features: what a marker costs in batch payload, whatever deflate saves.
        public var bytesPerMarker: Double
        /// Bytes the clients' sockets received over the wire (after deflate, with the handshakes, every
        /// message and its frame header): Linux's count per TCP connection, read as each closes.
        public var wireBytes: Int
        /// wireBytes ÷ features.
        public var wireBytesPerMarker: Double
        /// Bytes a server re-sending every visible feature at each answered viewport would have sent.
        public var naiveBytes: Int
        /// bytes ÷ naiveBytes, in percent.
        public var bytesPercentOfNaive: Double
        public var presenceMessages: Int
    }

    /// Latencies in milliseconds.
    public struct Latency: Codable, Sendable {
        public var connect: Summary
        /// Viewport sent → first batch for it received.
        public var firstBatch: Summary
        /// Viewport sent → its `done` received.
        public var done: Summary
    }

    /// Per-second totals over the steady seconds.
    public struct Rates: Codable, Sendable {
        public var viewports: Summary
        public var batches: Summary
        public var markers: Summary
        public var bytes: Summary
    }

    /// How the clients compare: one sample per client.
    public struct Fairness: Codable, Sendable {
        /// Each client's own p99 of viewport → done, ms.
        public var doneP99: Summary
        /// Each client's batch bytes per second over the run.
        public var bytesPerSecond: Summary
    }

    /// The server's own figures from /metrics, before and after (nil when not readable).
    public struct ServerSide: Codable, Sendable {
        public var metricsURL: String
        public var sessionsBefore: Double?
        public var sessionsAfter: Double?
        public var cpuSeconds: Double?
        /// CPU over the measured interval, percent of one core.
        public var cpuPercent: Double?
        public var rssBeforeBytes: Double?
        public var rssAfterBytes: Double?
        /// RSS growth ÷ sessions added; nil when the data changed during the run.
        public var rssPerSessionBytes: Double?
        /// Whether the server's data version moved during the run (live data).
        public var dataChanged: Bool?
        /// The server's own viewport → first batch over the run (its histogram's difference): the
        /// share within 5 ms, and how many first batches waited for the client's window.
        public var firstBatchWithin5msPercent: Double?
        public var firstBatchCount: Double?
        /// Server CPU over the run ÷ viewports it served (first batches sent), µs.
        public var cpuPerViewportMicros: Double?
        public var windowWaits: Double?
        /// The server's median and p99 of viewport → first batch over the run, ms, read from its histogram.
        public var firstBatchP50Ms: Double?
        public var firstBatchP99Ms: Double?
        /// Read after the tour, the clients still connected: the indexes of filtered views held, their
        /// estimated bytes and points, and the full index's, estimated the same way.
        public var filterIndexes: Double?
        public var filterIndexBytes: Double?
        public var filterIndexPoints: Double?
        public var indexBytes: Double?
        public var indexPoints: Double?
        public var error: String?
    }

    /// Filtered mode (`--filters`, `--probes`): what viewers with filters saw.
    public struct Filtered: Codable, Sendable {
        /// Distinct filters the clients viewed through, and the clients.
        public var filters: Int
        public var viewers: Int
        /// Smallest and largest share of the points a filter let through, by the servers' `hello`s.
        public var shareMin: Double?
        public var shareMax: Double?
        /// Viewport → first batch once each client's filter was in use (its first view left out).
        public var warmFirstBatchMs: Summary
        /// A never-seen filter (about 10 % of the points) set by the probe → the first batch of its view.
        public var neverSeenFirstBatchMs: Summary
        public var probesSent: Int
        /// Points received and checked against the viewer's filter, and those outside it (must be 0).
        public var pointsChecked: Int
        public var scopeViolations: Int
        /// The first of those, described.
        public var firstViolation: String?
        /// The filtered indexes' estimated bytes (`pinwheel_filter_index_bytes`) against their share of
        /// the full index's (their points ÷ its points × `pinwheel_index_bytes`) plus 1 MB each.
        public var indexBytes: Double?
        public var allowedBytes: Double?
        /// Errors of the probe viewer.
        public var probeErrors: [String: Int]
    }

    /// The load tool's own CPU over the steady part of the run, and the machine's idle share: when the
    /// tool or the machine was saturated, `warnings` says so, since latencies then measure that too.
    public struct Tool: Codable, Sendable {
        /// Percent of one core, every thread of the tool together.
        public var cpuPercent: Double
        /// Percent of one core used by the tool's busiest thread.
        public var busiestThreadPercent: Double
        /// Idle share of the whole machine's CPU.
        public var machineIdlePercent: Double
        public var cores: Int
        public var warnings: [String]
    }

    /// The member pages a probe beside the clients asked for (`--leaves-probe`, ``LeavesProbe``).
    public struct Leaves: Codable, Sendable {
        /// From each first page of 100's request to its answer, ms.
        public var pageMs: Summary
        /// Requests the server turned away, by error code (`rate-limited` ones were asked again).
        public var refused: [String: Int]
        /// Why the probe stopped early, if it did.
        public var error: String?
    }

    /// One client's figures.
    public struct Client: Codable, Sendable {
        public var index: Int
        public var session: String
        public var connectMs: Double?
        public var viewportsSent: Int
        public var viewportsAnswered: Int
        public var viewportsSuperseded: Int
        public var viewportsUnanswered: Int
        public var batches: Int
        public var markers: Int
        public var bytes: Int
        public var naiveBytes: Int
        public var firstBatchMs: Summary
        public var doneMs: Summary
        public var closeCode: Int?
        public var errors: [String: Int]
    }

    public var run: Run
    public var totals: Totals
    public var latency: Latency
    public var rates: Rates
    public var perClient: Fairness
    /// Close codes of every connection, including the run's own 1000 at the end.
    public var closes: [String: Int]
    /// Close codes the server sent while the run was still going.
    public var closesDuringRun: [String: Int]
    public var errors: [String: Int]
    public var server: ServerSide?
    public var tool: Tool?
    /// The producer's side and the viewers' staleness, when the run pushed changes.
    public var ingest: Ingest?
    public var filtered: Filtered?
    /// The member-page probe's figures, when the run had one.
    public var leaves: Leaves?
    public var clients: [Client]

    /// Every error counted, including failed connects, closes during the run and unanswered viewports.
    public var errorCount: Int { errors.values.reduce(0, +) }
}
