import PinwheelTestSupport

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
