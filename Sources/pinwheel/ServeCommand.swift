import ArgumentParser
import Dispatch
import Foundation
import Logging
import PinwheelCore
import PinwheelLoad
import PinwheelServer
import PinwheelTransport

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

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one.")
    var port = 8080

    @Option(help: "Folder served at / (default: the repository's web/).")
    var web: String?

    @Option(
        name: .customLong("allowed-origin"),
        help: "An origin allowed to open a WebSocket (repeatable; default: the server's own).")
    var allowedOrigins: [String] = []

    @Option(help: "More sessions than this are closed with 1013.")
    var maxSessions = 10_000

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

    @Option(help: "Simulated tourists touring the map inside the server; open the page to see their viewports.")
    var bots = 0

    // libev by default: lws's poll loop scans every socket at each wake-up, which cost 55 % of a core
    // with 1,000 sessions at one viewport per second each.
    @Option(help: "lws event loop: libev (epoll underneath) or poll (scans every socket at each wake-up).")
    var eventLoop = EventLoopBackend.libev.rawValue

    @Flag(help: "Refuse permessage-deflate: less CPU and memory per session, more bytes on the wire.")
    var noDeflate = false

    @Option(help: "trace, debug, info, notice, warning, error or critical.")
    var logLevel = "info"

    private var clusterOptions: ClusterOptions {
        var options = ClusterOptions()
        options.radius = radius
        options.minPoints = minPoints
        return options
    }

    func validate() throws {
        if data != nil && synthetic != nil { throw ValidationError("--data and --synthetic exclude each other") }
        if let n = synthetic, n < 0 { throw ValidationError("--synthetic must be 0 or more, got \(n)") }
        if !(0...65_535).contains(port) { throw ValidationError("--port must be 0...65535, got \(port)") }
        if maxSessions < 1 { throw ValidationError("--max-sessions must be at least 1, got \(maxSessions)") }
        if bots < 0 || bots >= maxSessions {
            throw ValidationError("--bots must be 0 up to --max-sessions - 1 (\(maxSessions - 1)), got \(bots)")
        }
        if !(viewportHz > 0 && viewportHz.isFinite) { throw ValidationError("--viewport-hz must be positive") }
        if !["fail", "skip"].contains(onBadRow) {
            throw ValidationError("--on-bad-row must be fail or skip, got \(onBadRow)")
        }
        for text in aggregates {
            do { _ = try Aggregate(parsing: text) } catch { throw ValidationError("--aggregate: \(error)") }
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
            case "extent":
                throw ValidationError("--radius must be at most the tile extent, \(value) pixels, got \(radius)")
            default: throw ValidationError("--\(name) must be \(expected), got \(value)")
            }
        }
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
        if EventLoopBackend(rawValue: eventLoop) == nil {
            throw ValidationError("--event-loop must be poll or libev, got \(eventLoop)")
        }
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

        guard let webRoot = web ?? ResourceLocator.folder(named: "web", containing: "index.html") else {
            throw ValidationError(
                "no web/ folder found next to the executable or the working directory; pass --web DIR")
        }
        var configuration = ServerConfiguration(webRoot: webRoot)
        configuration.host = host
        configuration.port = port
        configuration.allowedOrigins = allowedOrigins
        configuration.maxSessions = maxSessions
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

        let source: DatasetSource
        if let data {
            source = .file(data)
        } else if let synthetic {
            source = .synthetic(synthetic)
        } else {
            source = .demo
        }
        let started = ContinuousClock.now
        let dataset = try source.load(badRows: onBadRow == "skip" ? .skip : .fail)
        logger.info("loaded \(dataset.name): \(dataset.dataset.count) points in \(ContinuousClock.now - started)")
        logLeftOut(dataset, logger: logger)

        let server = try Server(configuration: configuration, dataset: dataset, logger: logger)
        try server.start()
        let scheme = tlsCert == nil ? "http" : "https"
        // Unbuffered, so a test or script reading our stdout sees the line at once.
        FileHandle.standardOutput.write(
            Data("pinwheel listening on \(scheme)://\(urlHost(host)):\(server.port)\n".utf8))
        let tourists = try startBots(server: server, secure: tlsCert != nil, logger: logger)

        // Signal handlers run on a Dispatch queue; `@Sendable` keeps them off the main actor.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let queue = DispatchQueue(label: "pinwheel.signals")
        let sources = [SIGINT, SIGTERM].map { signo in
            let source = DispatchSource.makeSignalSource(signal: signo, queue: queue)
            source.setEventHandler { @Sendable in
                logger.info("signal \(signo): closing every session with 1001")
                server.stop()
            }
            source.resume()
            return source
        }
        server.wait()
        tourists?.stop()
        for source in sources { source.cancel() }
        logger.info("stopped")
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
