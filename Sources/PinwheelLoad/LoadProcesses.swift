import Foundation

/// A load test run as several processes of the tool, each running a share of the clients with client
/// contexts of its own: lws's libev loop allows one per process, and near 10,000 clients that one
/// thread, not the server, sets the clients' tail. The parts start together; each, once drained and
/// still connected, waits until the server's /metrics has been read (so its side counts every
/// session), then closes and writes what it measured to a file that this process merges.
public struct LoadProcesses: Sendable {
    public let options: LoadOptions

    public init(options: LoadOptions) {
        self.options = options
    }

    /// Runs the parts and merges them into one report; blocks the calling thread.
    /// - Parameters:
    ///   - executable: the tool's executable.
    ///   - arguments: a part's command line, given the file holding its options (these options with
    ///     its share of the clients; see ``readPartOptions(_:)``) and the file it writes its figures to.
    ///   - progress: called about once a second with the parts' running totals added together
    ///     (calling thread).
    /// - Throws: `LoadError` for bad options, or a part that failed (naming it).
    public func run(
        executable: String, arguments: (_ optionsFile: String, _ figuresFile: String) -> [String],
        progress: (LoadProgress) -> Void = { _ in }
    ) throws(LoadError) -> LoadReport {
        try options.validate()
        let url = try LoadRunner.url(options)
        let count = options.processes
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("pinwheel-load-\(getpid())")
        do {
            // Only this user may read it: the producer's part finds the ingest token in its options.
            // Set again in case a folder of this name was left by an earlier run of the same pid.
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: folder.path)
        } catch {
            throw .partFailed("cannot make \(folder.path): \(error)")
        }
        defer { try? FileManager.default.removeItem(at: folder) }
        var server = ServerSideReader(url: url, enabled: options.scrapeMetrics)
        server.readBefore()
        // The probe beside the parts, in this process: the parts' start lags by their launch alone.
        let probe = LeavesProbe.start(options)

        let files = (0..<count).map { folder.appendingPathComponent("part-\($0).json").path }
        var parts: [Process] = []
        for (k, file) in files.enumerated() {
            let optionsFile = folder.appendingPathComponent("part-\(k).options.json").path
            try writePartOptions(share: ClientShare(index: k, count: count), to: optionsFile)
            let part = Process()
            part.executableURL = URL(fileURLWithPath: executable)
            part.arguments = arguments(optionsFile, file)
            part.standardOutput = FileHandle.nullDevice
            do { try part.run() } catch {
                for started in parts { started.terminate() }
                throw .partFailed("part \(k + 1) of \(count) did not start: \(error)")
            }
            parts.append(part)
        }

        // Every part drained and still connected, or one gone: the server's side now.
        let open = files.map(Self.openMarker)
        let started = ContinuousClock.now
        let deadline = started + options.ramp + options.duration + options.drainTimeout + .seconds(60)
        var nextProgress = started + .seconds(1)
        while ContinuousClock.now < deadline, parts.allSatisfy(\.isRunning),
            !open.allSatisfy(FileManager.default.fileExists(atPath:))
        {
            Thread.sleep(forTimeInterval: 0.02)
            guard ContinuousClock.now >= nextProgress else { continue }
            nextProgress += .seconds(1)
            var total = LoadProgress()
            for file in files.map(Self.progressFile) {
                guard let data = FileManager.default.contents(atPath: file),
                    let latest = try? JSONDecoder().decode(LoadProgress.self, from: data)
                else { continue }
                total.add(latest)
            }
            total.elapsed = started.duration(to: .now)
            progress(total)
        }
        server.readAfter()
        for marker in open { try? FileManager.default.removeItem(atPath: marker) }

        var measured: [LoadPart] = []
        for (k, part) in parts.enumerated() {
            part.waitUntilExit()
            guard part.terminationStatus == 0,
                let data = FileManager.default.contents(atPath: files[k]),
                let read = try? JSONDecoder().decode(LoadPart.self, from: data)
            else {
                for other in parts where other.isRunning { other.terminate() }
                throw .partFailed(
                    "part \(k + 1) of \(count) exited with status \(part.terminationStatus) and no figures")
            }
            measured.append(read)
        }
        var report = LoadRunner(options: options).report(LoadPart.merged(measured), server: server.report())
        report.leaves = probe?.finish()
        return report
    }

    /// Runs one part (`options.share`) as `run` starts it: tours, keeping its running totals in a file
    /// beside `file` for the starting process's progress line, then waits with its connections open
    /// until the starting process has read the server's side (at most a minute), then writes its
    /// figures to `file`.
    public static func runPart(options: LoadOptions, writingTo file: String) throws(LoadError) {
        let marker = openMarker(file)
        let progressURL = URL(fileURLWithPath: progressFile(file))
        let encoder = JSONEncoder()
        let part = try LoadRunner(options: options).runPart(
            progress: { totals in
                // Replaced whole (a rename), so the starting process never reads half a file.
                try? encoder.encode(totals).write(to: progressURL, options: .atomic)
            },
            whileOpen: {
                _ = FileManager.default.createFile(atPath: marker, contents: nil)
                let deadline = ContinuousClock.now + .seconds(60)
                while ContinuousClock.now < deadline, FileManager.default.fileExists(atPath: marker) {
                    Thread.sleep(forTimeInterval: 0.02)
                }
            })
        do { try JSONEncoder().encode(part).write(to: URL(fileURLWithPath: file)) } catch {
            throw .partFailed("cannot write \(file): \(error)")
        }
    }

    /// The options of a part that `run` started, from the file it wrote.
    /// - Throws: `LoadError.partFailed` naming the file when it cannot be read.
    public static func readPartOptions(_ file: String) throws(LoadError) -> LoadOptions {
        guard let data = FileManager.default.contents(atPath: file),
            let options = try? JSONDecoder().decode(LoadOptions.self, from: data)
        else { throw .partFailed("cannot read the part's options from \(file)") }
        return options
    }

    /// Writes what the part for `share` runs: these options, that share, one process, and no /metrics of
    /// its own (this process reads them). Every option reaches the parts without being listed here.
    /// The producer, if any, runs in the first part alone with the still viewers set against it, and only
    /// it is given the ingest token.
    private func writePartOptions(share: ClientShare, to file: String) throws(LoadError) {
        var part = options
        part.share = share
        part.processes = 1
        part.scrapeMetrics = false
        if share.index != 0 {
            part.ingestRate = 0
            part.ingestToken = nil
            part.still = 0
        }
        do { try JSONEncoder().encode(part).write(to: URL(fileURLWithPath: file)) } catch {
            throw .partFailed("cannot write \(file): \(error)")
        }
    }

    /// The file a part makes once drained, which the starting process removes once it has read the
    /// server's side.
    private static func openMarker(_ file: String) -> String { file + ".open" }

    /// The file holding a part's latest running totals.
    private static func progressFile(_ file: String) -> String { file + ".progress" }
}
