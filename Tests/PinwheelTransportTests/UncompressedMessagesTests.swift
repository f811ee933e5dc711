import Testing

@testable import PinwheelTransport

@Suite("Which messages go out without permessage-deflate")
struct UncompressedMessagesTests {
    func connection(server: Bool) -> LWSConnection {
        let connection = LWSConnection(
            id: ConnectionID(rawValue: 1), wsi: nil, maxMessageBytes: 1 << 20, closeGrace: .seconds(1))
        connection.leavesShortTextUncompressed = server
        return connection
    }

    @Test("a server leaves binary under 4 KiB and text under 256 bytes uncompressed")
    func server() {
        let server = connection(server: true)
        #expect(server.sendsUncompressed(payloadCount: 4095, binary: true))
        #expect(!server.sendsUncompressed(payloadCount: 4096, binary: true))
        #expect(server.sendsUncompressed(payloadCount: 255, binary: false))
        #expect(!server.sendsUncompressed(payloadCount: 256, binary: false))
    }

    @Test("a client (pinwheel load) compresses every text message, as browsers do")
    func client() {
        let client = connection(server: false)
        #expect(!client.sendsUncompressed(payloadCount: 40, binary: false))
        #expect(!client.sendsUncompressed(payloadCount: 255, binary: false))
        #expect(client.sendsUncompressed(payloadCount: 100, binary: true))
    }
}
