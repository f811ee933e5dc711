import Foundation
import PinwheelCore
import PinwheelTestSupport
import PinwheelTransport
import Synchronization
import Testing

/// Many compressed messages, some larger than lws's send buffer, queued at once to slow readers: each
/// WRITEABLE writes several whole compressed messages, and lws buffers what the socket does not take.
/// (With lws's own deflate extension this aborted the server, extension-permessage-deflate.c:415.)
@Suite("permessage-deflate under bursts", .serialized)
struct LWSDeflateBurstTests {
    @Test(
        "a burst of mixed-size messages to slow deflate readers arrives whole and in order, and the server stays up"
    )
    func burstToSlowDeflateReaders() throws {
        let readers = 4
        let (server, serverEvents) = try makeServer(echoPrefix: nil) { configuration in
            // Room for the whole burst: this test is about deflate, not the queue cap.
            configuration.maxQueuedBytesPerConnection = 64 * 1024 * 1024
        }
        defer { server.stop() }
        let messages = Self.burst(seed: 0x5EED_DEF1, count: 240, txPacketSize: server.configuration.txPacketSize)
        let expected = FileManager.default.temporaryDirectory
            .appendingPathComponent("pinwheel-deflate-burst-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: messages).write(to: expected)
        defer { try? FileManager.default.removeItem(at: expected) }

        let outputs = ReaderOutputs()
        let group = DispatchGroup()
        for _ in 0..<readers {
            DispatchQueue.global().async(group: group) {
                let run = try? runPython(
                    Self.slowReaderScript, arguments: ["ws://127.0.0.1:\(server.port)/", expected.path])
                outputs.lines.withLock { $0.append(run?.output ?? "python did not run") }
            }
        }
        #expect(eventually(timeout: .seconds(20)) { serverEvents.openCount == readers })
        let ids = serverEvents.events.withLock { $0.opened.map(\.id) }
        // Everything is queued at once, so each WRITEABLE finds many messages waiting.
        for message in messages {
            for id in ids {
                #expect(Self.queued(server.send(message, to: id)))
            }
        }
        #expect(group.wait(timeout: .now() + 120) == .success)
        for output in outputs.lines.withLock({ $0 }) {
            #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == "ok \(messages.count)")
        }
        // Still serving: a new deflate client gets a fresh message.
        let (client, clientEvents) = try makeClient()
        defer { client.stop() }
        let late = try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
        #expect(eventually { serverEvents.openCount == readers + 1 })
        let lateID = serverEvents.events.withLock { $0.opened.last!.id }
        #expect(Self.queued(server.send("still up", to: lateID)))
        #expect(eventually { clientEvents.messages(late) == ["still up"] })
    }

    static func queued(_ result: SendResult) -> Bool {
        if case .queued = result { return true }
        return false
    }

    /// `count` numbered messages: many small ones, and medium and large ones (some over
    /// `txPacketSize`) of random letters, so they compress to far more than deflate's 1 KiB tx buffer.
    static func burst(seed: UInt64, count: Int, txPacketSize: Int) -> [String] {
        var random = SplitMix64(seed: seed)
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,.:[]{}".utf8)
        return (0..<count).map { index in
            let size: Int
            switch Int.random(in: 0..<10, using: &random) {
            case 0: size = Int.random(in: txPacketSize + 1...2 * txPacketSize, using: &random)
            case 1...3: size = Int.random(in: 2_000...40_000, using: &random)
            default: size = Int.random(in: 1...300, using: &random)
            }
            let body = (0..<size).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] }
            return "\(index):" + String(decoding: body, as: UTF8.self)
        }
    }

    // Reads with a small receive queue and pauses, so the server's socket fills and lws's writes
    // are partial, and pings now and then (lws answers with a control frame between drains);
    // compares each message with the expected list, in order.
    static let slowReaderScript = #"""
        import json, sys, time
        from websockets.sync.client import connect

        url, path = sys.argv[1], sys.argv[2]
        expected = json.load(open(path))
        try:
            with connect(url, subprotocols=["pinwheel.v1"], compression="deflate", max_size=None,
                         max_queue=2, proxy=None, open_timeout=20, ping_interval=None) as ws:
                for index, want in enumerate(expected):
                    got = ws.recv(timeout=60)
                    if got != want:
                        print(f"message {index}: got {len(got)} bytes starting {got[:20]!r}, "
                              f"want {len(want)} starting {want[:20]!r}")
                        sys.exit(0)
                    if index % 4 == 0:
                        ws.ping()
                    if index % 8 == 0:
                        time.sleep(0.01)
            print(f"ok {len(expected)}")
        except Exception as e:
            print(type(e).__name__ + ": " + str(e))
        """#
}

/// What each slow reader printed, gathered from the threads that ran them.
private final class ReaderOutputs: Sendable {
    let lines = Mutex<[String]>([])
}
