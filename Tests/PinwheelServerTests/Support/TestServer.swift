import Foundation
import Logging
import PinwheelCore

@testable import PinwheelServer

/// A real `PinwheelServer` on 127.0.0.1, port 0, serving a deterministic synthetic dataset.
final class TestServer: Sendable {
    let server: PinwheelServer
    var port: Int { server.port }
    var wsURL: String { "ws://127.0.0.1:\(port)/" }
    var httpURL: String { "http://127.0.0.1:\(port)" }
    var origin: String { "http://127.0.0.1:\(port)" }

    /// The dataset the tests share: synthetic points with same-coordinate groups, built once.
    static let dataset = LoadedDataset(name: "synthetic-test", dataset: SyntheticGenerator(seed: 7).dataset(count: 20_000))
    /// Its clusterers, built once for every test server.
    static let clusterers = try! Clusterers(dataset: dataset.dataset)

    /// Starts a server; `configure` adjusts the options first.
    init(_ configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        var configuration = ServerConfiguration(webRoot: TestServer.repositoryRoot + "/web")
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configure(&configuration)
        var logger = Logger(label: "pinwheel-test")
        logger.logLevel = .warning
        let clusterers =
            configuration.clusterOptions == ClusterOptions()
            ? Self.clusterers : try Clusterers(dataset: Self.dataset.dataset, options: configuration.clusterOptions)
        server = PinwheelServer(configuration: configuration, dataset: Self.dataset, clusterers: clusterers, logger: logger)
        try server.start()
    }

    deinit {
        server.stop()
    }

    /// The features the core gives for a viewport: what a client must hold once it is served.
    func coreFeatures(
        bbox: [Double], zoom: Double, algorithm: Algorithm = ServerConfiguration(webRoot: "").algorithm
    ) -> [FeatureID: Feature] {
        var out: [Feature] = []
        let box = BBox.normalized(west: bbox[0], south: bbox[1], east: bbox[2], north: bbox[3])
        server.clusterers.clusterer(for: algorithm).features(in: box, zoom: zoom, into: &out)
        return Dictionary(out.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    }

    static var repositoryRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
    }

    /// GETs a path and returns the status and body; `https` accepts the test's self-signed certificate.
    func get(_ path: String, https: Bool = false) async throws -> (status: Int, body: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let base = https ? "https://127.0.0.1:\(port)" : httpURL
        process.arguments = ["curl", "-s", "-k", "-o", "-", "-w", "\n%{http_code}", base + path]
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

/// What a client holds after applying batches, and what it saw on the way.
struct ClientView {
    var features: [UInt64: JSON] = [:]
    var batches: [JSON] = []
    var addedIDs: [UInt64] = []
    var removedIDs: [UInt64] = []

    mutating func apply(_ batch: JSON) {
        batches.append(batch)
        for r in batch["remove"].array {
            let id = r.uint64!
            removedIDs.append(id)
            features[id] = nil
        }
        for f in batch["update"].array { features[f["id"].uint64!] = f }
        for f in batch["add"].array {
            addedIDs.append(f["id"].uint64!)
            features[f["id"].uint64!] = f
        }
    }
}

extension WSDriver {
    /// Acknowledges `batch` as the page does: every add applied, in a millisecond.
    func ack(_ id: String, _ batch: JSON) {
        send(id, ["type": "ack", "batch": batch["batch"].int!, "applied": batch["add"].array.count, "ms": 1.0])
    }

    /// Receives and acknowledges batches on `id` until the batch marked done for `seq`.
    func drain(_ id: String, seq: Int, into view: inout ClientView, ack: Bool = true) async throws {
        while true {
            let batch = try await message(id, type: "batch", timeout: .seconds(20))
            view.apply(batch)
            if ack { self.ack(id, batch) }
            if batch["done"].bool == true && batch["seq"].int == seq { return }
        }
    }

    /// Connects, checks the subprotocol and takes the hello.
    @discardableResult
    func open(_ id: String, _ server: TestServer) async throws -> JSON {
        let opened = try await connect(id, url: server.wsURL, origin: server.origin)
        guard opened["event"].string == "open" else { throw DriverTimeout() }
        return try await message(id, type: "hello")
    }
}

/// A viewport message.
func viewport(_ seq: Int, _ bbox: [Double], zoom: Double, width: Int = 1280, height: Int = 800) -> [String: Any] {
    ["type": "viewport", "seq": seq, "bbox": bbox, "zoom": zoom, "width": width, "height": height]
}
