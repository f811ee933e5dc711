import PinwheelCore
import PinwheelTestSupport
import Testing

@testable import PinwheelServer

/// A client's features after applying decoded batches, and the frames that brought them.
private struct DecodedView {
    var features: [FeatureID: WireFeature] = [:]
    var frames: [(type: String, binary: Bool)] = []
    /// The connection's binary decoder, whose running state spans its frames.
    var decoder = BinaryDecoder()
}

extension WSDriver {
    /// Decodes frames on `id` (opened with `frames: true`) until `seq`'s done batch, acknowledging each.
    fileprivate func drainFrames(_ id: String, seq: UInt64, into view: inout DecodedView) async throws {
        while true {
            let frame = try await self.frame(id, timeout: .seconds(20))
            let message = try view.decoder.decode(frame: frame.bytes, binary: frame.binary)
            guard case .batch(let b) = message else {
                view.frames.append(("other", frame.binary))
                continue
            }
            view.frames.append(("batch", frame.binary))
            for id in b.remove { view.features[id] = nil }
            for f in b.update + b.add { view.features[f.id] = f }
            send(id, ["type": "ack", "batch": Int(b.batch), "applied": b.add.count, "ms": 1.0])
            if b.done && b.seq == seq { return }
        }
    }

    /// The first frame on `id`, decoded as the hello it must be.
    fileprivate func hello(_ id: String) async throws -> (HelloMessage, binary: Bool) {
        let frame = try await self.frame(id)
        guard !frame.binary, case .hello(let hello) = try ServerMessage.decode(frame.bytes) else {
            throw DriverTimeout()
        }
        return (hello, frame.binary)
    }
}

@Suite("pinwheel.v1+bin over a real WebSocket", .serialized)
struct BinaryEncodingTests {
    @Test(
        "a client listing pinwheel.v1+bin gets it: hello as JSON text, then binary batches that decode to the features a JSON session gets",
        arguments: [true, false])
    func binarySessionMatchesJSON(deflate: Bool) async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        let json = try await driver.connect(
            "json", url: server.wsURL, origin: server.origin, compression: deflate, frames: true)
        let binary = try await driver.connect(
            "bin", url: server.wsURL, subprotocols: ["pinwheel.v1+bin", "pinwheel.v1"], origin: server.origin,
            compression: deflate, frames: true)
        #expect(json["subprotocol"].string == "pinwheel.v1")
        #expect(binary["subprotocol"].string == "pinwheel.v1+bin")
        #expect(binary["extensions"].array.compactMap(\.string) == (deflate ? ["permessage-deflate"] : []))
        let (jsonHello, jsonHelloBinary) = try await driver.hello("json")
        let (binaryHello, binaryHelloBinary) = try await driver.hello("bin")
        #expect(jsonHello.encoding == .json && !jsonHelloBinary)
        #expect(binaryHello.encoding == .binary && !binaryHelloBinary)

        var jsonView = DecodedView()
        var binaryView = DecodedView()
        for (seq, box) in [(UInt64(1), europe), (2, europeEast)] {
            for id in ["json", "bin"] { driver.send(id, viewport(Int(seq), box, zoom: 6)) }
            try await driver.drainFrames("json", seq: seq, into: &jsonView)
            try await driver.drainFrames("bin", seq: seq, into: &binaryView)
        }
        #expect(jsonView.frames.allSatisfy { !$0.binary })
        #expect(binaryView.frames.allSatisfy { $0.binary })
        #expect(binaryView.frames.count > 2)
        #expect(jsonView.features.count > 50)
        #expect(Set(binaryView.features.keys) == Set(jsonView.features.keys))
        // JSON writes positions to 7 decimals, binary on its grid: the same place within a grid step.
        for (id, f) in jsonView.features {
            guard var b = binaryView.features[id] else { continue }
            let step = Double(BinaryGrid.unit(of: id)) / 1e7
            if abs(b.lat - f.lat) <= step && abs(b.lon - f.lon) <= step {
                b.lat = f.lat
                b.lon = f.lon
            }
            if let a = b.anchor, let fa = f.anchor, abs(a.lat - fa.lat) <= step && abs(a.lon - fa.lon) <= step {
                b.anchor = fa
            }
            #expect(b == f, "\(id)")
        }
    }

    @Test("a client offering only pinwheel.v1, or listing it first, gets JSON text frames")
    func oldClientsGetJSON() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        for (id, offer) in [("old", ["pinwheel.v1"]), ("first", ["pinwheel.v1", "pinwheel.v1+bin"])] {
            let open = try await driver.connect(
                id, url: server.wsURL, subprotocols: offer, origin: server.origin, frames: true)
            #expect(open["subprotocol"].string == "pinwheel.v1")
            let (hello, helloBinary) = try await driver.hello(id)
            #expect(hello.encoding == .json && !helloBinary)
            driver.send(id, viewport(1, europe, zoom: 5))
            var view = DecodedView()
            try await driver.drainFrames(id, seq: 1, into: &view)
            #expect(!view.features.isEmpty)
            #expect(view.frames.allSatisfy { !$0.binary })
        }
    }

    @Test("expand on a binary session answers with a binary expansion; a binary frame from the client closes 1003")
    func expansionAndClientBinary() async throws {
        let server = try TestServer()
        let driver = try WSDriver()
        try await driver.connect(
            "bin", url: server.wsURL, subprotocols: ["pinwheel.v1+bin"], origin: server.origin, frames: true)
        _ = try await driver.hello("bin")
        let cluster = try #require(server.coreFeatures(bbox: europe, zoom: 5).values.first { !$0.isPoint })
        driver.send("bin", ["type": "expand", "id": cluster.id])
        let frame = try await driver.frame("bin")
        #expect(frame.binary)
        var decoder = BinaryDecoder()
        guard case .expansion(let expansion) = try decoder.decode(frame.bytes) else {
            Issue.record("not an expansion")
            return
        }
        #expect(expansion.id == cluster.id)
        driver.send("bin", bytes: [1, 2, 3], binary: true)
        let closed = try await driver.closed("bin")
        #expect(closed.code == 1003)
    }
}
