import Foundation
import Logging
import PinwheelCore
import PinwheelServer

/// A real `Server` on 127.0.0.1, port 0, serving a deterministic synthetic dataset.
public final class TestServer: Sendable {
    public let server: Server
    public var port: Int { server.port }
    public var wsURL: String { "ws://127.0.0.1:\(port)/" }
    public var httpURL: String { "http://127.0.0.1:\(port)" }
    public var origin: String { "http://127.0.0.1:\(port)" }

    /// The dataset the tests share: synthetic points with same-coordinate groups, built once.
    public static let dataset = LoadedDataset(
        name: "synthetic-test", dataset: SyntheticGenerator(seed: 7).dataset(count: 20_000))
    /// Its clusterers, built once for every test server.
    static let clusterers = try! Clusterers(dataset: dataset.dataset)

    /// Starts a server; `configure` adjusts the options first.
    /// - Parameter building: the algorithms built before it starts, as `serve` builds only its default
    ///   one; nil: every one, shared by the tests.
    public init(building: Set<Algorithm>? = nil, _ configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        var configuration = ServerConfiguration(webRoot: TestServer.repositoryRoot + "/web")
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configure(&configuration)
        var logger = Logger(label: "pinwheel-test")
        logger.logLevel = .warning
        let clusterers =
            if let building {
                try Clusterers(
                    dataset: Self.dataset.dataset, options: configuration.clusterOptions, algorithms: building)
            } else if configuration.clusterOptions == ClusterOptions() {
                Self.clusterers
            } else {
                try Clusterers(dataset: Self.dataset.dataset, options: configuration.clusterOptions)
            }
        server = Server(configuration: configuration, dataset: Self.dataset, clusterers: clusterers, logger: logger)
        try server.start()
    }

    deinit {
        server.stop()
    }

    /// The features the core gives for a viewport: what a client must hold once it is served.
    public func coreFeatures(
        bbox: [Double], zoom: Double, algorithm: Algorithm = ServerConfiguration(webRoot: "").algorithm
    ) -> [FeatureID: Feature] {
        var out: [Feature] = []
        let box = BBox.normalized(west: bbox[0], south: bbox[1], east: bbox[2], north: bbox[3])
        server.clusterers.clusterer(for: algorithm).features(in: box, zoom: zoom, into: &out)
        return Dictionary(out.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    }

    public static var repositoryRoot: String {
        // Tests/PinwheelTestSupport/TestServer.swift
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
    }

    /// GETs a path and returns the status and body; `https` accepts the test's self-signed certificate.
    public func get(_ path: String, https: Bool = false) async throws -> (status: Int, body: String) {
        try await Self.get((https ? "https://127.0.0.1:\(port)" : httpURL) + path)
    }

    /// GETs a URL with curl and returns the status and body, accepting a self-signed certificate.
    public static func get(_ url: String) async throws -> (status: Int, body: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "-s", "-k", "-o", "-", "-w", "\n%{http_code}", url]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        var text = String(decoding: data, as: UTF8.self)
        let newline = text.lastIndex(of: "\n") ?? text.startIndex
        let status = Int(text[text.index(after: newline)...]) ?? -1
        text = String(text[..<newline])
        return (status, text)
    }
}
