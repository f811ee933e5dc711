import Foundation
import PinwheelServer
import Testing

@Suite("WebSocketServer on lws", .serialized)
struct LWSWebSocketServerTests {
    @Test("a client asking for pinwheel.v1 gets it and a message round-trips through the delegate")
    func handshakeAndEcho() throws {
        let (server, serverEvents) = try makeServer()
        defer { server.stop() }
        let (client, events) = try makeClient()
        defer { client.stop() }
        let id = try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
        client.send("hello", to: id)
        #expect(eventually { events.messages(id) == ["echo:hello"] })
        #expect(events.events.withLock { $0.opened[id]?.subprotocol } == "pinwheel.v1")
        #expect(serverEvents.openCount == 1)
        #expect(server.port > 0)
    }
}
