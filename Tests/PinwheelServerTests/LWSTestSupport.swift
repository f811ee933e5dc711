import Foundation
import PinwheelServer
import Synchronization

/// Polls `condition` every 5 ms until it holds or `timeout` passes; true when it held.
func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.005)
    }
    return condition()
}

/// What a test server heard, recorded from the service thread and read by the test.
final class RecordingServerDelegate: WebSocketServerDelegate {
    struct Events {
        var opened: [ConnectionInfo] = []
        var messages: [(ConnectionID, String)] = []
        var closed: [ConnectionID: (CloseCode, String)] = [:]
    }

    let events = Mutex(Events())
    /// Echo every message back with this prefix (nil: no echo).
    let echoPrefix: String?
    // Set after the server exists; the delegate needs it to answer.
    let server = Mutex<WebSocketServer?>(nil)

    init(echoPrefix: String? = nil) {
        self.echoPrefix = echoPrefix
    }

    func webSocketServer(_ server: WebSocketServer, didOpen connection: ConnectionInfo) {
        events.withLock { $0.opened.append(connection) }
    }

    func webSocketServer(_ server: WebSocketServer, didReceive text: [UInt8], from connection: ConnectionID) {
        let message = String(decoding: text, as: UTF8.self)
        events.withLock { $0.messages.append((connection, message)) }
        if let echoPrefix {
            server.send(echoPrefix + message, to: connection)
        }
    }

    func webSocketServer(_ server: WebSocketServer, didClose connection: ConnectionID, code: CloseCode, reason: String)
    {
        events.withLock { $0.closed[connection] = (code, reason) }
    }

    var openCount: Int { events.withLock { $0.opened.count } }
    var closedCount: Int { events.withLock { $0.closed.count } }
}

/// What a test client heard.
final class RecordingClientDelegate: WebSocketClientDelegate {
    struct Events {
        var opened: [ConnectionID: (subprotocol: String?, connectTime: Duration)] = [:]
        var messages: [ConnectionID: [String]] = [:]
        var closed: [ConnectionID: (code: CloseCode, reason: String)] = [:]
        var failed: [ConnectionID: String] = [:]
    }

    let events = Mutex(Events())

    func webSocketClient(
        _ client: WebSocketClient, didOpen connection: ConnectionID, subprotocol: String?, connectTime: Duration
    ) {
        events.withLock { $0.opened[connection] = (subprotocol, connectTime) }
    }

    func webSocketClient(_ client: WebSocketClient, didReceive text: [UInt8], from connection: ConnectionID) {
        let message = String(decoding: text, as: UTF8.self)
        events.withLock { $0.messages[connection, default: []].append(message) }
    }

    func webSocketClient(_ client: WebSocketClient, didClose connection: ConnectionID, code: CloseCode, reason: String)
    {
        events.withLock { $0.closed[connection] = (code, reason) }
    }

    func webSocketClient(_ client: WebSocketClient, didFailToConnect connection: ConnectionID, error: String) {
        events.withLock { $0.failed[connection] = error }
    }

    func messages(_ id: ConnectionID) -> [String] { events.withLock { $0.messages[id] ?? [] } }
    func isOpen(_ id: ConnectionID) -> Bool { events.withLock { $0.opened[id] != nil } }
    func close(_ id: ConnectionID) -> (code: CloseCode, reason: String)? { events.withLock { $0.closed[id] } }
    func failure(_ id: ConnectionID) -> String? { events.withLock { $0.failed[id] } }
}

/// A started server on 127.0.0.1 with an ephemeral port, plus its recording delegate.
func makeServer(
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
func makeClient(
    _ configure: (inout WebSocketClientConfiguration) -> Void = { _ in }
) throws -> (WebSocketClient, RecordingClientDelegate) {
    var configuration = WebSocketClientConfiguration()
    configure(&configuration)
    let client = WebSocketClient(configuration: configuration)
    let delegate = RecordingClientDelegate()
    try client.start(delegate: delegate)
    return (client, delegate)
}

/// Runs a Python script with the `python3` on PATH (the one `scripts/setup` gave `websockets`)
/// and returns its stdout and exit status.
func runPython(_ script: String, arguments: [String] = []) throws -> (
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
func curl(_ arguments: [String]) throws -> String {
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
