import ArgumentParser
import Foundation
import PinwheelCore
import PinwheelLoad

/// `pinwheel feed`: a producer of live data, for trying ingest and for demos.
struct FeedCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "feed",
        abstract: "Push changes to a Pinwheel server: replay an NDJSON file or simulate moving vehicles.",
        discussion: """
            Posts changes to --url's /v1/changes with the token in --token-file, --batch lines per \
            request, at --rate changes per second, and prints once a second what was acknowledged. \
            Without --file it simulates --movers vehicles driving between cities (a few withdrawn \
            and new ones appearing). Example:
              pinwheel feed --url http://127.0.0.1:8080 --token-file token --movers 500 --rate 200
            """)

    @Option(help: "The server's HTTP URL.")
    var url: String = "http://127.0.0.1:8080"

    @Option(help: "File holding the ingest token (the server's --ingest-token-file).")
    var tokenFile: String

    @Option(help: "Replay this NDJSON file of changes once, instead of simulating vehicles.")
    var file: String?

    @Option(help: "Simulated vehicles.")
    var movers: Int = 200

    @Option(help: "Changes per second.")
    var rate: Double = 200

    @Option(help: "Lines per request.")
    var batch: Int = 50

    @Option(help: "Stop after this long (e.g. 30s, 10m); runs until interrupted when absent.")
    var duration: DurationArgument?

    @Option(help: "Seed of the simulation.")
    var seed: UInt64 = 1

    func run() throws {
        guard let target = URL(string: url), target.scheme == "http", let host = target.host else {
            throw ValidationError("--url must be http://host:port, got \(url)")
        }
        guard rate > 0, batch >= 1 else { throw ValidationError("--rate must be above 0 and --batch at least 1") }
        let token = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(
            in: .whitespacesAndNewlines)
        var options = Producer.Options(host: host, port: target.port ?? 80, token: token)
        options.rate = rate
        options.batch = batch
        let producer = Producer(options: options)
        let until = duration.map { ContinuousClock.now + $0.value } ?? .now + .seconds(365 * 86400)
        var report = FeedReport()
        do {
            if let file {
                guard let bytes = FileManager.default.contents(atPath: file) else {
                    throw Self.failure("cannot read \(file)")
                }
                // Read as the server reads a request: CRLF endings, blank lines and a byte order mark.
                let lines = ChangeLines.parse(Array(bytes))
                if let bad = lines.rejected.first { throw Self.failure("\(file):\(bad.line): \(bad.error)") }
                var source = lines.changes.makeIterator()
                try producer.run(source: &source, until: until) { report.record($0) }
            } else {
                var movers = Movers(count: movers, seed: seed)
                var source = Array(movers.placements()).makeIterator()
                try producer.run(source: &source, until: until) { report.record($0) }
                var stream = AnyIterator { movers.next() }
                try producer.run(source: &stream, until: until) { report.record($0) }
            }
        } catch let failure as HTTPExchange.Failure {
            report.flush()
            throw Self.failure(failure.reason)
        }
        report.flush()
    }

    /// Writes why the feed stops to standard error; the exit status to throw.
    private static func failure(_ reason: String) -> ExitCode {
        FileHandle.standardError.write(Data("pinwheel feed: \(reason)\n".utf8))
        return ExitCode(1)
    }
}

/// Once a second: changes acknowledged, the version, and how long answers took.
private struct FeedReport {
    private var since = ContinuousClock.now
    private var accepted = 0
    private var rejected = 0
    private var total = 0
    private var version: UInt64 = 0
    private var latencies: [Double] = []

    mutating func record(_ ack: Producer.Ack) {
        accepted += ack.answer.accepted
        total += ack.answer.accepted
        rejected += ack.answer.rejected.count
        for r in ack.answer.rejected.prefix(3) { print("rejected line \(r.line): \(r.error)") }
        version = ack.answer.version
        let took = ack.sentAt.duration(to: ack.ackedAt).components
        latencies.append(Double(took.seconds) * 1000 + Double(took.attoseconds) / 1e15)
        if since.duration(to: .now) >= .seconds(1) { flush() }
    }

    mutating func flush() {
        guard !latencies.isEmpty else { return }
        latencies.sort()
        let p50 = latencies[latencies.count / 2]
        let p99 = latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
        print(
            String(
                format: "acknowledged %d (%d in all), rejected %d, version %llu, answer p50 %.1f ms p99 %.1f ms",
                accepted, total, rejected, version, p50, p99))
        since = .now
        accepted = 0
        rejected = 0
        latencies.removeAll()
    }
}
