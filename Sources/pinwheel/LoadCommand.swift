import ArgumentParser
import Foundation
import PinwheelCore
import PinwheelLoad
import PinwheelTransport

/// `pinwheel load`: many simulated people touring a Pinwheel server's map over real WebSockets.
struct LoadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "load",
        abstract: "Load-test a Pinwheel server with simulated people touring the map.",
        discussion: """
            Opens --clients WebSocket connections over --ramp, lets each tour the map for --duration \
            (drags of 100-600 px, zoom steps, jumps between cities, seeded), acknowledges every batch \
            as the page does, then prints latency percentiles, rates, bytes compared with re-sending \
            every visible feature, close codes, errors, and the server's CPU and RSS per session read \
            from its /metrics. Example:
              pinwheel load --url ws://127.0.0.1:8080/ --clients 1000 --duration 30s --json load.json
            """)

    @Option(help: "The server's WebSocket URL.")
    var url: String = "ws://127.0.0.1:8080/"

    @Option(help: "Simulated people, one WebSocket connection each.")
    var clients: Int = 100

    @Option(help: "How long the clients tour after the ramp (e.g. 30s, 2m, 500ms).")
    var duration: DurationArgument = DurationArgument(.seconds(30))

    @Option(help: "Connections open evenly over this time.")
    var ramp: DurationArgument = DurationArgument(.seconds(5))

    @Option(
        name: .customLong("viewport-hz"), help: "Viewports per second per client while it moves; 0 = idle after hello.")
    var viewportHz: Double = 10

    @Option(help: "Movement: pan, zoom, mixed or jump.")
    var trace: TourTrace = .mixed

    @Option(
        help: """
            steady: a viewport every 1/viewport-hz s while moving; people: each gesture's views at \
            --gesture-hz, idle between gestures, viewport-hz on average.
            """)
    var pacing: TourPacing = .steady

    @Option(name: .customLong("gesture-hz"), help: "Viewports per second during a gesture with --pacing people.")
    var gestureHz: Double = 10

    @Option(help: "Seed of the tours; equal seeds give equal tours.")
    var seed: UInt64 = 1

    @Option(help: "Client service threads (lws contexts) sharing the connections; more than 1 needs --event-loop poll.")
    var threads: Int = 1

    // libev by default: with poll, 5–25 % of the handshakes of a 5,000–10,000 connection ramp stalled
    // here, and its syscalls cost the tool ten times the system time of an idle run.
    @Option(
        name: .customLong("event-loop"),
        help: "lws event loop of the clients: libev (one context per process, so --threads 1) or poll.")
    var eventLoop: EventLoopBackend = .libev

    @Option(
        help: """
            Processes of the tool sharing the clients, each with its own event loop, their figures merged \
            into one report (default: one per 5,000 viewports a second the clients send, up to the cores; \
            1 with --ingest-rate or --event-loop poll). Not more than 1 with --ingest-rate.
            """)
    var processes: Int?

    /// Set by `--processes` for the processes it starts: the file holding this one's options (those of
    /// the starting process, with its share of the clients); every other option is ignored.
    @Option(help: .hidden)
    var partOptions: String?

    /// Set with `--part-options`: where that process writes its figures.
    @Option(help: .hidden)
    var partFile: String?

    @Option(help: "Write the report as JSON to this file.")
    var json: String?

    @Option(
        help:
            "After the tour, how long to wait for the last answers (still viewers get all of it, to show the producer's last changes)."
    )
    var drain: DurationArgument = DurationArgument(.seconds(5))

    @Flag(help: "Do not offer permessage-deflate (browsers do).")
    var noDeflate = false

    @Option(help: "json (subprotocol pinwheel.v1) or binary (pinwheel.v1+bin: batches in binary frames).")
    var encoding: LoadEncoding = .json

    @Flag(help: "Ask the server for presence messages, like the multi-client demo page.")
    var presence = false

    @Flag(help: "Do not read the server's /metrics before and after.")
    var noMetrics = false

    @Flag(help: "No progress line on stderr.")
    var quiet = false

    @Option(
        help:
            "Changes per second posted to the server's /v1/changes beside the clients (90 % moves, 5 % inserts, 5 % deletes); the report adds their staleness at the viewers. Needs --ingest-token-file."
    )
    var ingestRate: Double = 0

    @Option(help: "File holding the server's ingest token.")
    var ingestTokenFile: String?

    @Option(help: "Lines per ingest request.")
    var ingestBatch = 500

    @Option(
        help:
            "Still viewers beside the touring clients, with --ingest-rate: each sets one view near a city (alternately zoom 12 and zoom 5) and never moves; the report gives the staleness of every change in their views and their longest wait for an update."
    )
    var still = 0

    @Option(
        help:
            "Filtered mode: give the clients this many distinct filters over the points' `tenant` and `speed` (serve --synthetic-tenants), matching 1 % to 50 % of the points, client k the (k mod N)-th, each set with `settings` before its first viewport; every point received is checked against its viewer's filter."
    )
    var filters = 0

    @Option(help: "Tenants the server's points are spread over (its --synthetic-tenants); the filters pick among them.")
    var tenants = 0

    @Option(
        help:
            "A probe viewer sets this many never-seen filters (each about 10 % of the points) one after another over the tour; the report gives their first batch."
    )
    var probes = 0

    @Flag(
        help:
            "One more viewer beside the clients, over the steady part of the run, opening clusters' member lists: first pages of 100 (`leaves`), up to five clusters of each view, one after another; the report gives each page's time from request to answer."
    )
    var leavesProbe = false

    func run() throws {
        if let partOptions, let partFile {
            try LoadProcesses.runPart(options: LoadProcesses.readPartOptions(partOptions), writingTo: partFile)
            return
        }
        var options = LoadOptions(url: url)
        options.ingestRate = ingestRate
        options.ingestBatch = ingestBatch
        options.still = still
        options.filters = filters
        options.tenants = tenants
        options.probes = probes
        options.leavesProbe = leavesProbe
        if let ingestTokenFile {
            options.ingestToken = try String(contentsOfFile: ingestTokenFile, encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        options.clients = clients
        options.duration = duration.value
        options.ramp = ramp.value
        options.viewportHz = viewportHz
        options.trace = trace
        options.pacing = pacing
        options.gestureHz = gestureHz
        options.seed = seed
        options.threads = threads
        options.eventLoop = eventLoop
        options.processes = processes ?? options.automaticProcesses(cores: ProcessInfo.processInfo.activeProcessorCount)
        options.drainTimeout = drain.value
        options.deflate = !noDeflate
        options.encoding = encoding.wire
        options.presence = presence
        options.scrapeMetrics = !noMetrics
        do {
            try options.validate()
        } catch {
            throw ValidationError(error.description)
        }
        let quiet = self.quiet
        var previous = LoadProgress()
        let progress = { (sample: LoadProgress) in
            guard !quiet else { return }
            FileHandle.standardError.write(Data((sample.line(since: previous, clients: options.clients) + "\n").utf8))
            previous = sample
        }
        let report: LoadReport
        if options.processes > 1 {
            report = try LoadProcesses(options: options).run(
                executable: "/proc/self/exe",
                arguments: { optionsFile, figuresFile in
                    ["load", "--part-options", optionsFile, "--part-file", figuresFile]
                }, progress: progress)
        } else {
            report = try LoadRunner(options: options).run(progress: progress)
        }
        print(LoadTable.render(report), terminator: "")
        if let json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: json))
        }
        if report.errorCount > 0 {
            throw ExitCode(1)
        }
    }
}

extension TourTrace: ExpressibleByArgument {}
extension TourPacing: ExpressibleByArgument {}

/// `--encoding`: the names people type for the subprotocols.
enum LoadEncoding: String, ExpressibleByArgument, CaseIterable {
    case json, binary

    var wire: WireEncoding { self == .json ? .json : .binary }
}
extension EventLoopBackend: ExpressibleByArgument {}

/// A duration on the command line: `30s`, `500ms`, `2m`, or bare seconds.
struct DurationArgument: ExpressibleByArgument {
    let value: Duration

    init(_ value: Duration) {
        self.value = value
    }

    init?(argument: String) {
        let units: [(String, Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        var number = Substring(argument)
        var scale = 1.0
        for (suffix, factor) in units where argument.hasSuffix(suffix) {
            number = argument.dropLast(suffix.count)
            scale = factor
            break
        }
        guard let amount = Double(number), amount.isFinite, amount >= 0 else { return nil }
        value = .milliseconds(Int64((amount * scale * 1000).rounded()))
    }

    var defaultValueDescription: String {
        let (s, a) = value.components
        return a == 0 ? "\(s)s" : "\(Double(s) + Double(a) * 1e-18)s"
    }
}
