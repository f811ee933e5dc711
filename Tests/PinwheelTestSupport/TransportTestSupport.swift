import Foundation
import PinwheelTransport
import Synchronization

/// Polls `condition` every 5 ms until it holds or `timeout` passes; true when it held.
public func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.005)
    }
    return condition()
}

/// What a test server heard, recorded from the service thread and read by the test.
public final class RecordingServerDelegate: WebSocketServerDelegate {
    public struct Events {
        public var opened: [ConnectionInfo] = []
        public var messages: [(ConnectionID, String)] = []
        public var closed: [ConnectionID: (CloseCode, String)] = [:]
    }

    public let events = Mutex(Events())
    /// Echo every message back with this prefix (nil: no echo).
    public let echoPrefix: String?
    // Set after the server exists; the delegate needs it to answer.
    public let server = Mutex<WebSocketServer?>(nil)

    public init(echoPrefix: String? = nil) {
        self.echoPrefix = echoPrefix
    }

    public func webSocketServer(_ server: WebSocketServer, didOpen connection: ConnectionInfo) {
        events.withLock { $0.opened.append(connection) }
    }

    public func webSocketServer(_ server: WebSocketServer, didReceive text: [UInt8], from connection: ConnectionID) {
        let message = String(decoding: text, as: UTF8.self)
        events.withLock { $0.messages.append((connection, message)) }
        if let echoPrefix {
            server.send(echoPrefix + message, to: connection)
        }
    }

    public func webSocketServer(
        _ server: WebSocketServer, didClose connection: ConnectionID, code: CloseCode, reason: String
    ) {
        events.withLock { $0.closed[connection] = (code, reason) }
    }

    public var openCount: Int { events.withLock { $0.opened.count } }
    public var closedCount: Int { events.withLock { $0.closed.count } }
}

/// What a test client heard.
public final class RecordingClientDelegate: WebSocketClientDelegate {
    public struct Events {
        public var opened: [ConnectionID: (subprotocol: String?, connectTime: Duration)] = [:]
        public var messages: [ConnectionID: [String]] = [:]
        public var binaryMessages: [ConnectionID: [[UInt8]]] = [:]
        public var closed: [ConnectionID: (code: CloseCode, reason: String)] = [:]
        public var failed: [ConnectionID: String] = [:]
    }

    public let events = Mutex(Events())

    public func webSocketClient(
        _ client: WebSocketClient, didOpen connection: ConnectionID, subprotocol: String?, connectTime: Duration
    ) {
        events.withLock { $0.opened[connection] = (subprotocol, connectTime) }
    }

    public func webSocketClient(
        _ client: WebSocketClient, didReceive message: [UInt8], binary: Bool, from connection: ConnectionID
    ) {
        events.withLock { events in
            if binary {
                events.binaryMessages[connection, default: []].append(message)
            } else {
                events.messages[connection, default: []].append(String(decoding: message, as: UTF8.self))
            }
        }
    }

    public func webSocketClient(
        _ client: WebSocketClient, didClose connection: ConnectionID, code: CloseCode, reason: String
    ) {
        events.withLock { $0.closed[connection] = (code, reason) }
    }

    public func webSocketClient(_ client: WebSocketClient, didFailToConnect connection: ConnectionID, error: String) {
        events.withLock { $0.failed[connection] = error }
    }

    public func messages(_ id: ConnectionID) -> [String] { events.withLock { $0.messages[id] ?? [] } }
    public func binaryMessages(_ id: ConnectionID) -> [[UInt8]] { events.withLock { $0.binaryMessages[id] ?? [] } }
    public func isOpen(_ id: ConnectionID) -> Bool { events.withLock { $0.opened[id] != nil } }
    public func close(_ id: ConnectionID) -> (code: CloseCode, reason: String)? { events.withLock { $0.closed[id] } }
    public func failure(_ id: ConnectionID) -> String? { events.withLock { $0.failed[id] } }
}

/// A started server on 127.0.0.1 with an ephemeral port, plus its recording delegate.
public func makeServer(
    echoPrefix: String? = "echo:", _ configure: (inout WebSocketServerConfiguration) -> Void = { _ in }
) throws -> (WebSocketServer, RecordingServerDelegate) {
    var configuration = WebSocketServerConfiguration()
    configuration.port = 0
    configuration.stopTimeout = .seconds(2)
    configure(&configuration)
    let server = WebSocketServer(configuration: configuration)
    let delegate = RecordingServerDelegate(echoPrefix: echoPrefix)
    delegate.server.withLock { $0 = server }
    try server.start(delegate: delegate)
    return (server, delegate)
}

/// A started client with its recording delegate.
public func makeClient(
    _ configure: (inout WebSocketClientConfiguration) -> Void = { _ in }
) throws -> (WebSocketClient, RecordingClientDelegate) {
    var configuration = WebSocketClientConfiguration()
    configure(&configuration)
    let client = WebSocketClient(configuration: configuration)
    let delegate = RecordingClientDelegate()
    try client.start(delegate: delegate)
    return (client, delegate)
}

/// A server that records without echoing and an lws client connected to it with `pinwheel.v1`,
/// the server having seen the connection open.
public struct ConnectedPair {
    public let server: WebSocketServer
    public let serverEvents: RecordingServerDelegate
    public let client: WebSocketClient
    public let events: RecordingClientDelegate
    /// The connection as the client names it, and as the server does.
    public let id: ConnectionID
    public let serverID: ConnectionID

    /// The server never saw the client's connection open.
    public struct NotOpened: Error {}

    public init() throws {
        (server, serverEvents) = try makeServer(echoPrefix: nil)
        do {
            (client, events) = try makeClient()
            id = try client.connect(to: "ws://127.0.0.1:\(server.port)/", subprotocol: "pinwheel.v1")
        } catch {
            server.stop()
            throw error
        }
        let recorded = serverEvents
        guard eventually({ recorded.openCount == 1 }) else {
            client.stop()
            server.stop()
            throw NotOpened()
        }
        serverID = recorded.events.withLock { $0.opened[0].id }
    }

    /// Stops the client, then the server.
    public func stop() {
        client.stop()
        server.stop()
    }
}

/// Runs a Python script with the `python3` on PATH (the one `scripts/setup` gave `websockets`)
/// and returns its stdout and exit status.
public func runPython(_ script: String, arguments: [String] = []) throws -> (
    output: String, status: Int32
) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", script] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (String(decoding: data, as: UTF8.self), process.terminationStatus)
}

/// Runs curl with `arguments` and returns stdout.
public func curl(_ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
    process.arguments = ["-s", "--max-time", "10"] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self)
}
