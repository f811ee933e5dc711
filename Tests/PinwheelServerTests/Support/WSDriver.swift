import Foundation
import PinwheelTransport
import Synchronization
import Testing

/// A JSON value as the tests read it.
enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    init(any value: Any) {
        switch value {
        case let n as NSNumber where String(cString: n.objCType) == "c": self = .bool(n.boolValue)
        case let n as NSNumber: self = .number(n.doubleValue)
        case let s as String: self = .string(s)
        case let a as [Any]: self = .array(a.map(JSON.init(any:)))
        case let o as [String: Any]: self = .object(o.mapValues(JSON.init(any:)))
        default: self = .null
        }
    }

    subscript(key: String) -> JSON {
        if case .object(let o) = self { return o[key] ?? .null }
        return .null
    }

    var string: String? { if case .string(let s) = self { return s } else { return nil } }
    var double: Double? { if case .number(let n) = self { return n } else { return nil } }
    var int: Int? { double.map { Int($0) } }
    var uint64: UInt64? { double.map { UInt64($0) } }
    var bool: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    var array: [JSON] { if case .array(let a) = self { return a } else { return [] } }
    var keys: Set<String> { if case .object(let o) = self { return Set(o.keys) } else { return [] } }
}

/// Drives Tests/support/wsdriver.py: real WebSocket connections (Python `websockets`) that a test
/// opens, writes to and reads from by name.
final class WSDriver: @unchecked Sendable {
    private let process = Process()
    private let input = Pipe()
    private let output = Pipe()
    private let events = EventList()
    private let reader: Thread

    init() throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.scriptPath]
        process.standardInput = input
        process.standardOutput = output
        let handle = output.fileHandleForReading
        let events = self.events
        reader = Thread {
            var pending = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = pending[pending.startIndex..<newline]
                    pending = Data(pending[(newline + 1)...])
                    if let object = try? JSONSerialization.jsonObject(with: line, options: [.fragmentsAllowed]) {
                        let event = JSON(any: object)
                        events.list.withLock { $0.append(event) }
                    }
                }
            }
        }
        try process.run()
        reader.start()
    }

    deinit {
        try? input.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    static var scriptPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("support/wsdriver.py").path
    }

    /// Sends one command line.
    func command(_ fields: [String: Any]) {
        let data = try! JSONSerialization.data(withJSONObject: fields)
        input.fileHandleForWriting.write(data + Data("\n".utf8))
    }

    /// Opens a connection named `id` and waits for the handshake's outcome.
    @discardableResult
    func connect(
        _ id: String, url: String, subprotocols: [String] = ["pinwheel.v1"], origin: String? = nil,
        compression: Bool = true, read: Bool = true, frames: Bool = false
    ) async throws -> JSON {
        var fields: [String: Any] = [
            "op": "connect", "id": id, "url": url, "subprotocols": subprotocols, "compression": compression,
            "read": read, "frames": frames,
        ]
        if let origin { fields["origin"] = origin }
        command(fields)
        return try await next(timeout: .seconds(15)) {
            $0["id"].string == id && ($0["event"].string == "open" || $0["event"].string == "refused")
        }
    }

    func send(_ id: String, text: String) { command(["op": "send", "id": id, "text": text]) }
    func send(_ id: String, _ message: [String: Any]) {
        let data = try! JSONSerialization.data(withJSONObject: message)
        send(id, text: String(decoding: data, as: UTF8.self))
    }
    func send(_ id: String, bytes: [UInt8], binary: Bool) {
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        command(["op": "send", "id": id, "hex": hex, "binary": binary])
    }
    func setReading(_ id: String, _ reading: Bool) { command(["op": "read", "id": id, "read": reading]) }
    func close(_ id: String) { command(["op": "close", "id": id]) }

    /// Removes and returns the first event matching `predicate`, waiting up to `timeout`.
    func next(timeout: Duration = .seconds(10), where predicate: (JSON) -> Bool) async throws -> JSON {
        let deadline = ContinuousClock.now + timeout
        while true {
            let found = events.list.withLock { list -> JSON? in
                guard let i = list.firstIndex(where: predicate) else { return nil }
                return list.remove(at: i)
            }
            if let found { return found }
            if ContinuousClock.now > deadline { throw DriverTimeout() }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// The next message on connection `id` (optionally of one `type`).
    func message(_ id: String, type: String? = nil, timeout: Duration = .seconds(10)) async throws -> JSON {
        try await next(timeout: timeout) {
            $0["event"].string == "message" && $0["id"].string == id
                && (type == nil || $0["data"]["type"].string == type)
        }["data"]
    }

    /// The next frame on connection `id`, opened with `frames: true`: its bytes and whether it was binary.
    func frame(_ id: String, timeout: Duration = .seconds(10)) async throws -> (bytes: [UInt8], binary: Bool) {
        let event = try await next(timeout: timeout) { $0["event"].string == "frame" && $0["id"].string == id }
        if event["binary"].bool == true {
            let hex = Array((event["hex"].string ?? "").utf8)
            let bytes = stride(from: 0, to: hex.count - 1, by: 2).map {
                UInt8(String(decoding: hex[$0..<$0 + 2], as: UTF8.self), radix: 16)!
            }
            return (bytes, true)
        }
        return (Array((event["text"].string ?? "").utf8), false)
    }

    /// The close event of connection `id`.
    func closed(_ id: String, timeout: Duration = .seconds(10)) async throws -> (code: Int, reason: String) {
        let event = try await next(timeout: timeout) { $0["event"].string == "close" && $0["id"].string == id }
        return (event["code"].int ?? -1, event["reason"].string ?? "")
    }

    /// Messages already received on `id` and not yet taken, without waiting.
    func pending(_ id: String) -> [JSON] {
        events.list.withLock { list in
            list.filter { $0["event"].string == "message" && $0["id"].string == id }.map { $0["data"] }
        }
    }

    /// True when a close event for `id` has arrived and not been taken.
    func hasClosed(_ id: String) -> Bool {
        events.list.withLock { list in list.contains { $0["event"].string == "close" && $0["id"].string == id } }
    }
}

struct DriverTimeout: Error, CustomStringConvertible {
    var description: String { "timed out waiting for a WebSocket event" }
}

/// Events read from the driver, shared between its reader thread and the test.
final class EventList: Sendable {
    let list = Mutex<[JSON]>([])
}
