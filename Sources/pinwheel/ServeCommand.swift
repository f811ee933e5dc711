import ArgumentParser
import Dispatch
import Foundation
import Logging
import PinwheelCore
import PinwheelLoad
import PinwheelServer
import PinwheelTransport
import Synchronization

/// `pinwheel serve`: the WebSocket server and the page, on one port.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve clustered markers over WebSocket (pinwheel.v1) and the map page over HTTP."
    )

    @Option(help: "Points from a CSV, GeoJSON or NDJSON file (default: the embedded demo dataset).")
    var data: String?

    // fail by default: a file silently served short is worse than a clear refusal naming the line.
    @Option(help: "A bad row in --data: fail (stop, naming its line and column) or skip (leave it out and count it).")
    var onBadRow = "fail"

    @Option(
        name: .customLong("aggregate"),
        help: "NAME=OP(COLUMN): OP (sum, min, max or mean) of a numeric column over every cluster (repeatable).")
    var aggregates: [String] = []

    @Option(help: "Serve N generated points instead of a file.")
    var synthetic: Int?

    @Option(
        help:
            "With --synthetic: give the points a `tenant` column of this many tenants (t0, t1 …, equally common) and a `speed` column (0 to 99.9), for filtered and scoped views."
    )
    var syntheticTenants = 0

    @Option(
        help:
            "Address to listen on: IPv4 or IPv6 (0.0.0.0 every IPv4 interface, :: every IPv6 one), or a name resolved at start to its first IPv4 address (localhost: 127.0.0.1)."
    )
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port = 8080

    @Option(help: "Folder served at / (default: the repository's web/).")
    var web: String?

    @Option(
        name: .customLong("allowed-origin"),
        help:
            "An origin allowed to open a WebSocket besides the server's own, which always is (repeatable; * allows every origin)."
    )
    var allowedOrigins: [String] = []

    @Option(help: "More sessions than this are closed with 1013.")
    var maxSessions = 10_000

    @Option(
        help: ArgumentHelp(
            "Close a session that sends no message for this many seconds with 1000 (pings do not count); 0 never does.",
            valueName: "seconds"))
    var idleTimeout = 600

    @Option(help: "Viewports served per second per client (latest wins).")
    var viewportHz = 10.0

    @Option(help: "Most features one viewport is served; past it, those nearest the viewport's centre.")
    var maxFeatures = 10_000

    @Option(help: "Markers per millisecond of client time, before acks refine it.")
    var pace = 0.5

    @Option(help: "Unacknowledged batches in flight per client.")
    var window = 4

    @Option(help: "Larger client messages are closed with 1009.")
    var maxMessageBytes = 65_536

    @Option(help: "A new session's clustering algorithm: hierarchical or pca-tree.")
    var algorithm = Algorithm.hierarchical.rawValue

    @Option(help: "TLS certificate (PEM); needs --tls-key.")
    var tlsCert: String?

    @Option(help: "TLS private key (PEM); needs --tls-cert.")
    var tlsKey: String?

    @Option(help: "Cluster radius in pixels of a 512-px tile; the page's 256-px tiles show half (40 is 20 screen px).")
    var radius = ClusterOptions().radius

    @Option(help: "Fewest points that form a cluster.")
    var minPoints = ClusterOptions().minPoints

    @Option(help: "Coarsest zoom clustered (0...24); coarser views show its clusters.")
    var minZoom = ClusterOptions().minZoom

    @Option(help: "Finest zoom clustered (--min-zoom...24); finer views show every point.")
    var maxZoom = ClusterOptions().maxZoom

    @Option(help: "Tile width in pixels that --radius is measured against (at least --radius).")
    var extent = Int(ClusterOptions().extent)

    // One column: a cluster carries one count per value of it, on the wire and in the index; yes/no
    // questions about other columns are what --flag is for.
    @Option(
        name: .customLong("group-by"),
        help:
            "A property column every cluster counts its points by, per value: its 12 most common values and \"other\".")
    var groupBy: String?

    @Option(
        name: .customLong("flag"),
        help:
            #"NAME=RULE: count every cluster's points matching RULE, e.g. alert=["==",["get","status"],"alarm"] (==, !=, in, all, any, !; repeatable, at most 8)."#
    )
    var flags: [String] = []

    @Option(help: "Simulated tourists touring the map inside the server; open the page to see their viewports.")
    var bots = 0

    // libev by default: lws's poll loop scans every socket at each wake-up, which cost 55 % of a core
    // with 1,000 sessions at one viewport per second each.
    @Option(help: "lws event loop: libev (epoll underneath) or poll (scans every socket at each wake-up).")
    var eventLoop = EventLoopBackend.libev.rawValue

    @Option(
        help: ArgumentHelp(
            "Keep live data here: the change log and its snapshots. The data at first start comes from --data, --synthetic or the demo; afterwards from this folder.",
            valueName: "dir"))
    var dataDir: String?

    @Option(
        help: ArgumentHelp(
            "Where the change log lives: file (in --data-dir) or nats://HOST:PORT[,HOST:PORT...], a NATS JetStream stream every node shares (snapshots stay in --data-dir).",
            valueName: "file|nats-urls"))
    var log = "file"

    @Option(
        help:
            "File holding the bearer token producers must send to change data; ingest is off without it. Needs --data-dir."
    )
    var ingestTokenFile: String?

    @Option(
        help: ArgumentHelp(
            "File of producer tokens each limited to one tenant, a line 'TOKEN TENANT' each (# starts a comment): such a producer changes only points whose tenant column is its tenant. Needs --data-dir.",
            valueName: "file"))
    var producerTokens: String?

    @Option(
        help: ArgumentHelp(
            "Viewers must send a signed token (JWT) first, verified with this key: an HS256 secret, an RS256 or ES256 public key (PEM) or a JWKS. Without it viewers are anonymous.",
            valueName: "file"))
    var viewerKey: String?

    @Option(
        help: ArgumentHelp(
            "What --viewer-key holds: hs256, rs256, es256 or jwks (default: told from the file).", valueName: "kind"))
    var viewerKeyKind: String?

    @Option(help: "The point property a token's tenant claim is compared with.")
    var tenantColumn = "tenant"

    @Option(help: "Changes per second each producer may send; beyond it requests get 429.")
    var ingestRate: Double = 100_000

    @Option(
        help: ArgumentHelp(
            "Seconds a change request may take from its arrival to being sent to the log; later (or after this process was stopped while holding it) it is dropped with 503, never applied. Keep producers' timeouts longer.",
            valueName: "seconds"))
    var ingestDeadline: Double = 10

    @Option(
        help:
            "While viewers are connected, the most of one core that taking changes in (reading and checking them, applying them to the table, laying them over the index: the CPU time measured on those threads) may use, shared evenly by the producers; a producer over its part waits, or gets 429 on HTTP past a second. 0 lifts the limit."
    )
    var ingestShare = 0.3

    @Option(help: "Largest POST /v1/changes body in bytes; larger ones get 413.")
    var maxIngestBytes = 16 * 1024 * 1024

    @Option(
        help:
            "Seconds one HTTP request may take, headers and body together (headers: half of it, at most 10); a late body gets 408 and its connection is closed."
    )
    var httpDeadline = 30

    @Option(
        help: "Bytes per second a request body must keep up from 2 s after its headers, or get 408; 0 turns it off.")
    var httpMinBodyRate = 1024

    @Option(help: "Changes between two snapshots of live data (the log replays at most this many at start).")
    var snapshotEvery: UInt64 = 1_000_000

    @Option(
        help:
            "Milliseconds between two refreshes of the index while live data changes; each sends viewers what changed in their view. Stretched up to three times while viewports wait for their first batch."
    )
    var refreshInterval = 100

    @Option(
        help:
            "Seconds between two full rebuilds of the index while live data changes (changes in between are laid over the last build)."
    )
    var compactionInterval: Double = 2

    @Option(
        help:
            "Megabytes the indexes of filtered views may hold together; past it, indexes no session uses are let go of, least recently used first."
    )
    var filterMemory = 512

    @Option(
        help:
            "Simulated vehicles driving between cities, pushed through the ingest API; a temporary --data-dir is made when none is given."
    )
    var movers = 0

    @Option(help: "Changes per second the simulated vehicles send.")
    var moversRate: Double = 100

    @Flag(help: "Refuse permessage-deflate: less CPU and memory per session, more bytes on the wire.")
    var noDeflate = false

    @Option(
        help: ArgumentHelp(
            "On SIGTERM, answer /healthz with 503 for this many seconds (so a load balancer stops sending new sessions here) before closing every session with 1001.",
            valueName: "seconds"))
    var drain: Double = 0

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    private var clusterOptions: ClusterOptions {
        var options = ClusterOptions()
        options.radius = radius
        options.minPoints = minPoints
        options.minZoom = minZoom
        options.maxZoom = maxZoom
        options.extent = Double(extent)
        return options
    }

    func validate() throws {
        if data != nil && synthetic != nil { throw ValidationError("--data and --synthetic exclude each other") }
        if let n = synthetic, n < 0 { throw ValidationError("--synthetic must be 0 or more, got \(n)") }
        if syntheticTenants < 0 || syntheticTenants > 1_000_000 {
            throw ValidationError("--synthetic-tenants must be 0...1000000, got \(syntheticTenants)")
        }
        if syntheticTenants > 0 && synthetic == nil {
            throw ValidationError("--synthetic-tenants needs --synthetic N")
        }
        if !(0...65_535).contains(port) { throw ValidationError("--port must be 0...65535, got \(port)") }
        if maxSessions < 1 { throw ValidationError("--max-sessions must be at least 1, got \(maxSessions)") }
        if bots < 0 || bots >= maxSessions {
            throw ValidationError("--bots must be 0 up to --max-sessions - 1 (\(maxSessions - 1)), got \(bots)")
        }
        if idleTimeout < 0 {
            throw ValidationError("--idle-timeout must be 0 (never) or more seconds, got \(idleTimeout)")
        }
        if !(viewportHz > 0 && viewportHz.isFinite) { throw ValidationError("--viewport-hz must be positive") }
        if !["fail", "skip"].contains(onBadRow) {
            throw ValidationError("--on-bad-row must be fail or skip, got \(onBadRow)")
        }
        for text in aggregates {
            do { _ = try Aggregate(parsing: text) } catch { throw ValidationError("--aggregate: \(error)") }
        }
        for text in flags {
            do { _ = try FlagRule(parsing: text) } catch { throw ValidationError("--flag: \(error)") }
        }
        if flags.count > ClusterContents.maxFlags {
            throw ValidationError("--flag may be given at most \(ClusterContents.maxFlags) times, got \(flags.count)")
        }
        if maxFeatures < 1 { throw ValidationError("--max-features must be at least 1, got \(maxFeatures)") }
        if !(pace > 0 && pace.isFinite) { throw ValidationError("--pace must be positive") }
        if window < 1 { throw ValidationError("--window must be at least 1, got \(window)") }
        if maxMessageBytes < 256 { throw ValidationError("--max-message-bytes must be at least 256") }
        if Algorithm(rawValue: algorithm) == nil {
            let names = Algorithm.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("--algorithm must be one of \(names), got \(algorithm)")
        }
        do { try clusterOptions.validate() } catch {
            // The core's rules, reported under the flag's name.
            guard case .invalidOption(let name, let value, let expected) = error else { throw error }
            switch name {
            case "minPoints": throw ValidationError("--min-points must be \(expected), got \(value)")
            case "minZoom": throw ValidationError("--min-zoom must be \(expected), got \(value)")
            case "maxZoom":
                throw ValidationError(
                    "--max-zoom must be \(expected.replacingOccurrences(of: "minZoom", with: "--min-zoom")), got \(value)"
                )
            case "extent":
                throw ValidationError("--extent must be at least --radius (\(radius)) pixels, got \(extent)")
            default: throw ValidationError("--\(name) must be \(expected), got \(value)")
            }
        }
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
        if EventLoopBackend(rawValue: eventLoop) == nil {
            throw ValidationError("--event-loop must be poll or libev, got \(eventLoop)")
        }
        if ingestTokenFile != nil && dataDir == nil {
            throw ValidationError("--ingest-token-file needs --data-dir: accepted changes are kept there")
        }
        if producerTokens != nil && dataDir == nil {
            throw ValidationError("--producer-tokens needs --data-dir: accepted changes are kept there")
        }
        if let viewerKeyKind, ViewerKeys.Kind(rawValue: viewerKeyKind) == nil {
            throw ValidationError("--viewer-key-kind must be hs256, rs256, es256 or jwks, got \(viewerKeyKind)")
        }
        if viewerKeyKind != nil && viewerKey == nil {
            throw ValidationError("--viewer-key-kind needs --viewer-key")
        }
        if tenantColumn.isEmpty { throw ValidationError("--tenant-column must name a property") }
        if log != "file" {
            guard log.hasPrefix("nats://"), !natsServers.isEmpty else {
                throw ValidationError("--log must be file or nats://HOST:PORT[,HOST:PORT...], got \(log)")
            }
            if dataDir == nil && movers == 0 {
                throw ValidationError("--log \(log) needs --data-dir: this node's snapshots are kept there")
            }
        }
        if !(ingestRate > 0 && ingestRate.isFinite) { throw ValidationError("--ingest-rate must be positive") }
        if !(ingestDeadline > 0 && ingestDeadline.isFinite) {
            throw ValidationError("--ingest-deadline must be a positive number of seconds, got \(ingestDeadline)")
        }
        if !(ingestShare >= 0 && ingestShare <= 64) {
            throw ValidationError("--ingest-share must be 0 (no limit) to 64 cores, got \(ingestShare)")
        }
        if maxIngestBytes < 1024 { throw ValidationError("--max-ingest-bytes must be at least 1024") }
        if snapshotEvery < 1 { throw ValidationError("--snapshot-every must be at least 1") }
        if !(2...3600).contains(httpDeadline) {
            throw ValidationError("--http-deadline must be between 2 and 3600 seconds, got \(httpDeadline)")
        }
        if httpMinBodyRate < 0 { throw ValidationError("--http-min-body-rate must be 0 or more") }
        if !(10...10_000).contains(refreshInterval) {
            throw ValidationError("--refresh-interval must be between 10 and 10000 ms, got \(refreshInterval)")
        }
        if !(compactionInterval >= 0.1 && compactionInterval <= 3600) {
            throw ValidationError(
                "--compaction-interval must be between 0.1 and 3600 seconds, got \(compactionInterval)")
        }
        if !(1...1_048_576).contains(filterMemory) {
            throw ValidationError("--filter-memory must be between 1 and 1048576 MB, got \(filterMemory)")
        }
        if movers < 0 { throw ValidationError("--movers must be 0 or more, got \(movers)") }
        if !(moversRate > 0 && moversRate.isFinite) { throw ValidationError("--movers-rate must be positive") }
        if !(drain >= 0 && drain.isFinite) { throw ValidationError("--drain must be 0 or more seconds") }
        if Logger.Level(rawValue: logLevel) == nil {
            throw ValidationError("--log-level must be trace, debug, info, notice, warning, error or critical")
        }
    }

    func run() throws {
        let level = Logger.Level(rawValue: logLevel) ?? .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "pinwheel")
        // First, before any thread is made: the threads inherit how signals are taken.
        let signals = ShutdownSignals(drain: drain, logger: logger)
        MemoryPolicy.returnLargeBlocksToTheKernel()

        guard let webRoot = web ?? ResourceLocator.folder(named: "web", containing: "index.html") else {
            throw ValidationError(
                "no web/ folder found next to the executable or the working directory; pass --web DIR")
        }
        var configuration = ServerConfiguration(webRoot: webRoot)
        configuration.host = host
        configuration.port = port
        configuration.allowedOrigins = allowedOrigins
        configuration.maxSessions = maxSessions
        try budgetDescriptors(&configuration, logger: logger)
        configuration.idleTimeout = idleTimeout > 0 ? .seconds(idleTimeout) : nil
        configuration.viewportHz = viewportHz
        configuration.maxFeatures = maxFeatures
        configuration.pace = pace
        configuration.window = window
        configuration.maxMessageBytes = maxMessageBytes
        configuration.algorithm = Algorithm(rawValue: algorithm) ?? .hierarchical
        configuration.tlsCertificate = tlsCert
        configuration.tlsKey = tlsKey
        configuration.eventLoop = EventLoopBackend(rawValue: eventLoop) ?? .libev
        configuration.permessageDeflate = !noDeflate
        configuration.clusterOptions = clusterOptions
        configuration.aggregates = aggregates.compactMap { try? Aggregate(parsing: $0) }
        configuration.groupBy = groupBy
        configuration.flags = flags.compactMap { try? FlagRule(parsing: $0) }

        let source: DatasetSource
        if let data {
            source = .file(data)
        } else if let synthetic {
            source = .synthetic(synthetic, tenants: syntheticTenants)
        } else {
            source = .demo
        }
        let started = ContinuousClock.now
        let dataset = try source.load(badRows: onBadRow == "skip" ? .skip : .fail)
        logger.info("loaded \(dataset.name): \(dataset.dataset.count) points in \(ContinuousClock.now - started)")
        logLeftOut(dataset, logger: logger)

        let live = try liveData(logger: logger)
        configuration.ingestToken = live?.token
        try configureIdentity(&configuration, logger: logger)
        configuration.ingestRate = ingestRate
        configuration.ingestDeadline = .milliseconds(Int64(ingestDeadline * 1000))
        configuration.ingestShare = ingestShare > 0 ? ingestShare : nil
        configuration.maxIngestBodyBytes = maxIngestBytes
        configuration.httpDeadline = .seconds(httpDeadline)
        configuration.httpMinimumBodyRate = httpMinBodyRate
        configuration.snapshotEvery = snapshotEvery
        configuration.refreshInterval = .milliseconds(refreshInterval)
        configuration.compactionInterval = .milliseconds(Int64(compactionInterval * 1000))
        configuration.filterMemory = filterMemory << 20
        let server: Server
        if let live {
            let changeLog: any ChangeLog
            if log == "file" {
                changeLog = try FileChangeLog(directory: live.directory) { logger.warning("change log: \($0)") }
            } else {
                var options = JetStreamChangeLog.Options(servers: natsServers, directory: live.directory)
                options.name = "pinwheel \(urlHost(host)):\(port)"
                options.connectionEvents = { event in logger.warning("change log: \(event)") }
                let replicated = try JetStreamChangeLog(options: options)
                logger.info("change log: stream \(options.stream) on \(log), \(replicated.replicas) replicas")
                changeLog = replicated
            }
            server = try Server(configuration: configuration, dataset: dataset, log: changeLog, logger: logger)
        } else {
            server = try Server(configuration: configuration, dataset: dataset, logger: logger)
        }
        signals.starting(server)
        try server.start()
        signals.running()
        let scheme = tlsCert == nil ? "http" : "https"
        // Unbuffered, so a test or script reading our stdout sees the line at once.
        FileHandle.standardOutput.write(
            Data("pinwheel listening on \(scheme)://\(server.listeningAddress)\n".utf8))
        let relay = try startPresenceRelay(server: server, logger: logger)
        let tourists = try startBots(server: server, secure: tlsCert != nil, logger: logger)
        if let token = live?.token { startMovers(server: server, token: token, logger: logger) }

        server.wait()
        if dataDir == nil, let directory = live?.directory {
            // The folder --movers made for itself goes with the process.
            try? FileManager.default.removeItem(atPath: directory)
        }
        tourists?.stop()
        relay?.stop()
        signals.cancel()
        logger.info("stopped")
    }

    /// The NATS servers of `--log nats://A,B,...`, each as a URL.
    private var natsServers: [String] {
        log.dropFirst("nats://".count).split(separator: ",").map { part in
            part.contains("://") ? String(part) : "nats://\(part)"
        }
    }

    /// Where live data is kept and the token producers need; nil when the data never changes.
    private func liveData(logger: Logger) throws -> (directory: String, token: String?)? {
        var directory = dataDir
        if directory == nil && movers > 0 {
            var template = Array("/tmp/pinwheel-live-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else {
                throw ValidationError("--movers: cannot make a temporary --data-dir")
            }
            directory = String(cString: made)
            logger.info("live data in \(directory!) (temporary; pass --data-dir to keep it)")
        }
        guard let directory else { return nil }
        var token: String?
        if let ingestTokenFile {
            do {
                token = try String(contentsOfFile: ingestTokenFile, encoding: .utf8)
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            } catch {
                throw ValidationError(
                    "--ingest-token-file: cannot read \(ingestTokenFile): \(error.localizedDescription)")
            }
            guard let token, token.utf8.count >= 16 else {
                throw ValidationError("--ingest-token-file: the token must be at least 16 characters")
            }
        } else if movers > 0 {
            // The simulated vehicles are the only producer: a token nobody else knows.
            var random = SystemRandomNumberGenerator()
            token = (0..<32).map { _ in String(random.next() % 16, radix: 16) }.joined()
        }
        return (directory, token)
    }

    /// `--movers N`: a producer on loopback posting simulated vehicles' moves, as any producer would.
    private func startMovers(server: Server, token: String, logger: Logger) {
        guard movers > 0 else { return }
        var options = Producer.Options(host: "127.0.0.1", port: server.port, token: token)
        options.rate = moversRate
        options.batch = max(1, Int(moversRate / 10))
        let count = movers
        let producer = Producer(options: options)
        let thread = Thread {
            var simulation = Movers(count: count)
            var placements = simulation.placements().makeIterator()
            var steps = AnyIterator { simulation.next() }
            do {
                let forever = ContinuousClock.now + .seconds(365 * 86400)
                try producer.run(source: &placements, until: forever) { _ in }
                try producer.run(source: &steps, until: forever) { _ in }
            } catch {
                logger.warning("simulated vehicles stopped: \(error)")
            }
        }
        thread.name = "pinwheel-movers"
        thread.start()
        logger.info("\(movers) simulated vehicles moving (\(Int(moversRate)) changes/s through /v1/changes)")
    }

    /// With `--log nats://…`: the presence outlines of every node's sessions, over core NATS.
    private func startPresenceRelay(server: Server, logger: Logger) throws -> PresenceRelay? {
        guard log != "file" else { return nil }
        let relay = try PresenceRelay(
            board: server.presence, servers: natsServers, name: "pinwheel presence \(urlHost(host)):\(server.port)")
        try relay.start()
        logger.info("presence shared with the other nodes on \(PresenceRelay.subject) as node \(relay.node)")
        return relay
    }

    /// `--bots N`: N tourists on loopback (or on the bound address), with an origin the server accepts.
    private func startBots(server: Server, secure: Bool, logger: Logger) throws -> TouristBots? {
        guard bots > 0 else { return nil }
        let address = host == "0.0.0.0" || host == "::" ? "127.0.0.1" : urlHost(host)
        let ownOrigin = "\(secure ? "https" : "http")://\(address):\(server.port)"
        let origin = allowedOrigins.first { $0 != "*" } ?? ownOrigin
        do {
            let tourists = try TouristBots(
                count: bots, url: "\(secure ? "wss" : "ws")://\(address):\(server.port)/", origin: origin)
            logger.info("\(bots) simulated tourists touring the map (presence shows their viewports)")
            return tourists
        } catch {
            throw ValidationError("--bots: \(error)")
        }
    }

    /// Says what reading `--data` left out: unlocated features, and bad rows with the first reasons.
    private func logLeftOut(_ dataset: LoadedDataset, logger: Logger) {
        if dataset.unlocated > 0 {
            logger.info("left out \(dataset.unlocated) features with \"geometry\": null (unlocated, RFC 7946 §3.2)")
        }
        guard dataset.skipped > 0 else { return }
        logger.warning("left out \(dataset.skipped) bad rows (--on-bad-row skip); the first:")
        for error in dataset.skippedErrors.prefix(5) { logger.warning("  \(error)") }
    }

    private func urlHost(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }
}
