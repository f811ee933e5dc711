import PinwheelCore
import PinwheelTransport

/// What `pinwheel load` runs: how many clients, for how long, moving how. Codable: `--processes`
/// hands each part its options as a file.
public struct LoadOptions: Sendable, Codable {
    /// The server's WebSocket URL, e.g. `ws://127.0.0.1:8080/`.
    public var url: String
    /// Simulated people, each one WebSocket connection.
    public var clients: Int = 100
    /// How long the clients tour after the ramp.
    public var duration: Duration = .seconds(30)
    /// Connections open evenly over this time.
    public var ramp: Duration = .seconds(5)
    /// Viewports per second each client sends while it moves; 0 keeps the clients idle after `hello`.
    public var viewportHz: Double = 10
    /// How the clients move.
    public var trace: TourTrace = .mixed
    /// `viewportHz` as a steady tick, or as people send it: bursts at `gestureHz` while a gesture lasts,
    /// idle between gestures, `viewportHz` on average.
    public var pacing: TourPacing = .steady
    /// Viewports per second during a gesture with `.people` pacing (a page sends its views no faster
    /// than the server's `viewportHz`, 10 by default).
    public var gestureHz: Double = 10
    /// Seed of every tour (client k uses a seed derived from it and k).
    public var seed: UInt64 = 1
    /// lws client contexts, each with its own service thread, sharing the connections.
    public var threads: Int = 2
    /// Processes of the tool sharing the clients, each with its own contexts (one libev loop per
    /// process), their figures merged into one report.
    public var processes: Int = 1
    /// The clients this process runs: those whose index leaves `index` divided by `count`.
    public var share = ClientShare(index: 0, count: 1)
    /// After the tour ends, how long to wait for the last viewports' `done`.
    public var drainTimeout: Duration = .seconds(5)
    /// Map size every client reports, pixels.
    public var width: Int = 1280
    public var height: Int = 800
    /// Offer permessage-deflate, as browsers do.
    public var deflate: Bool = true
    /// The subprotocol asked for: JSON text frames, or batches in binary frames (`pinwheel.v1+bin`).
    public var encoding: WireEncoding = .json
    /// Ask the server for presence (other sessions' viewports), as the multi-client demo page does.
    public var presence: Bool = false
    /// The event loop of the client contexts. Poll by default, because a process holds at most one
    /// libev context (lws starts a SIGINT watcher on each libev loop, and libev aborts when one signal
    /// is attached to two loops): libev means one thread, and none inside a process already running a
    /// libev server.
    public var eventLoop: EventLoopBackend = .poll
    /// Read the server's /metrics before and after.
    public var scrapeMetrics: Bool = true
    /// Origin header sent with each handshake; nil derives `http://host:port` from `url`, as a page
    /// served by that server would send.
    public var origin: String?

    /// Changes per second a producer beside the clients posts to the server's `/v1/changes`
    /// (90 % moves, 5 % inserts, 5 % deletes); 0 posts none. Needs `ingestToken`.
    public var ingestRate: Double = 0
    /// The server's ingest token.
    public var ingestToken: String?
    /// Lines per ingest request.
    public var ingestBatch: Int = 500
    /// Still viewers beside the clients (``StillStaleness``), with a producer: each sets one view where
    /// the producer's changes land and never moves.
    public var still: Int = 0
    /// Runs a ``LeavesProbe`` beside the clients over the steady part of the run.
    public var leavesProbe = false

    /// Distinct filters the clients view through (``LoadFilters``), client k through the (k mod
    /// `filters`)-th, each set with `settings` before its first viewport: the shared filtered indexes
    /// a server builds for them; 0 for unfiltered clients. Every point a filtered client receives is
    /// checked against its filter.
    public var filters: Int = 0
    /// Tenants the server's points are spread over (`serve --synthetic-tenants`), which the filters
    /// select among; 0 for filters over `speed` alone.
    public var tenants: Int = 0
    /// Never-seen filters a probe viewer sets one after another over the tour, each matching about
    /// 10 % of the points (``LoadFilters/probe(_:)``): the first batch of a filter no session had.
    public var probes: Int = 0

    public init(url: String) {
        self.url = url
    }

    /// Ticks per second of each touring client: every tick may send a viewport.
    var tickHz: Double { pacing == .people ? gestureHz : viewportHz }

    /// Viewports a second one process of the tool sends before its thread becomes the limit: at 10,000 a
    /// second (1,000 clients × 10 Hz) one libev thread was three quarters busy reading and acknowledging
    /// the answers, and the clients' first batch p99 was 156–164 ms where two processes measured 8–11
    /// ms; at 5,000 (5,000 clients × 1 Hz) it was a third busy (docs/benchmarks/2026-11-27-load-tool-processes.md).
    static let viewportsPerProcess = 5_000.0

    /// The processes `pinwheel load` starts when not told: one per ``viewportsPerProcess`` the clients
    /// send, half as many viewports when a producer runs beside them (every viewer then also takes the
    /// changes in its view), at most one per core; one with the poll event loop, which spreads the
    /// clients over threads of one process instead.
    public func automaticProcesses(cores: Int) -> Int {
        guard eventLoop == .libev else { return 1 }
        let perProcess = ingestRate > 0 ? Self.viewportsPerProcess / 2 : Self.viewportsPerProcess
        let wanted = (Double(clients) * viewportHz / perProcess).rounded(.up)
        return max(1, min(cores, Int(min(wanted, 64))))
    }

    /// Share of the ticks a tour sends on, so the mean rate is `viewportHz`.
    var sendShare: Double { pacing == .people && gestureHz > 0 ? viewportHz / gestureHz : 1 }

    /// Checks the numbers; the error names the option.
    public func validate() throws(LoadError) {
        if clients < 1 { throw .invalidOption(name: "clients", value: String(clients), expected: "at least 1") }
        if duration <= .zero { throw .invalidOption(name: "duration", value: "\(duration)", expected: "more than 0") }
        if ramp < .zero { throw .invalidOption(name: "ramp", value: "\(ramp)", expected: "0 or more") }
        if !(viewportHz >= 0 && viewportHz <= 1000) {
            throw .invalidOption(name: "viewport-hz", value: String(viewportHz), expected: "0 to 1000")
        }
        if pacing == .people && !(gestureHz >= viewportHz && gestureHz <= 1000) {
            throw .invalidOption(
                name: "gesture-hz", value: String(gestureHz), expected: "viewport-hz (\(viewportHz)) to 1000")
        }
        if threads < 1 || threads > 64 {
            throw .invalidOption(name: "threads", value: String(threads), expected: "1 to 64")
        }
        if eventLoop == .libev && threads > 1 {
            throw .invalidOption(
                name: "threads", value: String(threads),
                expected: "1 with the libev event loop (one libev context per process), or --event-loop poll")
        }
        if processes < 1 || processes > 64 {
            throw .invalidOption(name: "processes", value: String(processes), expected: "1 to 64")
        }
        if !(share.count >= 1 && share.index >= 0 && share.index < share.count) {
            throw .invalidOption(
                name: "share", value: "\(share.index) of \(share.count)",
                expected: "index 0 to count - 1, count 1 or more")
        }
        if !(ingestRate >= 0 && ingestRate.isFinite) {
            throw .invalidOption(name: "ingest-rate", value: String(ingestRate), expected: "0 or more")
        }
        if ingestRate > 0 && ingestToken == nil {
            throw .invalidOption(name: "ingest-token-file", value: "none", expected: "a token file with --ingest-rate")
        }
        if !(0...1000).contains(still) {
            throw .invalidOption(name: "still", value: String(still), expected: "0 to 1000")
        }
        if still > 0 && ingestRate == 0 {
            throw .invalidOption(name: "still", value: String(still), expected: "0 without --ingest-rate")
        }
        if !(0...10_000).contains(filters) {
            throw .invalidOption(name: "filters", value: String(filters), expected: "0 to 10000")
        }
        if !(0...1_000_000).contains(tenants) {
            throw .invalidOption(name: "tenants", value: String(tenants), expected: "0 to 1000000")
        }
        if !(0...10_000).contains(probes) {
            throw .invalidOption(name: "probes", value: String(probes), expected: "0 to 10000")
        }
        if ingestBatch < 1 {
            throw .invalidOption(name: "ingest-batch", value: String(ingestBatch), expected: "at least 1")
        }
        if width < 1 || width > 16384 || height < 1 || height > 16384 {
            throw .invalidOption(name: "size", value: "\(width)x\(height)", expected: "1 to 16384 pixels each")
        }
    }
}

/// One process's share of a load test's clients.
public struct ClientShare: Sendable, Equatable, Codable {
    public var index: Int
    public var count: Int
}
