import Testing

@testable import PinwheelTransport

@Suite("How each message meets permessage-deflate")
struct DeflatePolicyTests {
    @Test("a server leaves binary under 4 KiB and text under 256 bytes uncompressed and compresses the rest itself")
    func server() {
        let server = DeflatePolicy.beforeQueueing(windowBits: 12)
        #expect(server.treatment(payloadCount: 4095, binary: true) == .none)
        #expect(server.treatment(payloadCount: 4096, binary: true) == .compressed)
        #expect(server.treatment(payloadCount: 255, binary: false) == .none)
        #expect(server.treatment(payloadCount: 256, binary: false) == .compressed)
    }

    @Test("a client (pinwheel load) compresses every text message as it writes it, as browsers do")
    func client() {
        let client = DeflatePolicy.whenWritten
        #expect(client.treatment(payloadCount: 40, binary: false) == .whenWritten)
        #expect(client.treatment(payloadCount: 255, binary: false) == .whenWritten)
        #expect(client.treatment(payloadCount: 100, binary: true) == .none)
        #expect(client.treatment(payloadCount: 5000, binary: true) == .whenWritten)
    }

    @Test("without deflate nothing is compressed")
    func off() {
        #expect(DeflatePolicy.off.treatment(payloadCount: 100_000, binary: false) == .none)
    }

    @Test("a server compresses with a 4 KiB window, or the smaller one a client asks for")
    func serverWindow() {
        #expect(DeflatePolicy.server(compresses: false, offer: "permessage-deflate") == .off)
        #expect(
            DeflatePolicy.server(compresses: true, offer: "permessage-deflate; client_max_window_bits")
                == .beforeQueueing(windowBits: 12))
        #expect(
            DeflatePolicy.server(compresses: true, offer: "permessage-deflate; server_max_window_bits=15")
                == .beforeQueueing(windowBits: 12))
        #expect(
            DeflatePolicy.server(compresses: true, offer: "permessage-deflate; server_max_window_bits=10")
                == .beforeQueueing(windowBits: 10))
        #expect(
            DeflatePolicy.server(
                compresses: true, offer: "permessage-deflate; server_max_window_bits=\"11\", permessage-deflate")
                == .beforeQueueing(windowBits: 11))
        #expect(
            DeflatePolicy.server(compresses: true, offer: "permessage-deflate; server_max_window_bits=8")
                == .beforeQueueing(windowBits: 8))
        // Below RFC 7692's smallest window nothing is compressed.
        #expect(DeflatePolicy.server(compresses: true, offer: "permessage-deflate; server_max_window_bits=7") == .off)
    }
}
