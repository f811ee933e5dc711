import Foundation
import PinwheelTransport

/// A Python process holding a raw WebSocket connection that completes the handshake and then
/// neither reads nor writes: a client that stopped reading, or one that went silent.
final class SilentRawClient {
    private let process = Process()
    private let output = Pipe()

    /// Connects to 127.0.0.1:`port` with a 4 KiB receive buffer and stays silent for `seconds`.
    init(port: Int, seconds: Int = 30) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.script, String(port), String(seconds)]
        process.standardOutput = output
        try process.run()
    }

    /// Blocks until the handshake is done (the script prints "open").
    func waitUntilOpen() -> Bool {
        let line = output.fileHandleForReading.readData(ofLength: 5)
        return String(decoding: line, as: UTF8.self).hasPrefix("open")
    }

    /// Ends the Python process (this test started it) and waits for it.
    func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
    }

    deinit {
        stop()
    }

    private static let script =
        rawHandshake + #"""
            time.sleep(seconds)
            """#
}

/// A Python process holding a raw WebSocket connection that answers every ping with a pong and,
/// when `talkEvery` is set, sends a text message that often; it prints "ping" for each ping.
final class PongingRawClient {
    private let process = Process()
    private let output = Pipe()

    /// Connects to 127.0.0.1:`port` and runs for `seconds`, then closes the socket.
    init(port: Int, seconds: Double, talkEvery: Double? = nil) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.script, String(port), String(seconds), String(talkEvery ?? 0)]
        process.standardOutput = output
        try process.run()
    }

    /// Waits for the script to end and returns the pings it saw, nil if the server closed first.
    func pingsSeen() -> Int? {
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let lines = text.split(separator: "\n")
        guard lines.first == "open", !lines.contains("closed") else { return nil }
        return lines.count { $0 == "ping" }
    }

    private static let script =
        rawHandshake + #"""
            import select, struct
            talk = float(sys.argv[3])
            def frame(opcode, payload):
                # A client's frames are masked; a zero mask leaves the payload as it is.
                return bytes([0x80 | opcode, 0x80 | len(payload)]) + b"\0\0\0\0" + payload
            def read(n):
                data = b""
                while len(data) < n:
                    chunk = s.recv(n - len(data))
                    if not chunk:
                        raise EOFError
                    data += chunk
                return data
            end = time.monotonic() + seconds
            next_talk = time.monotonic() + talk
            try:
                while time.monotonic() < end:
                    if talk and time.monotonic() >= next_talk:
                        s.sendall(frame(1, b"t"))
                        next_talk += talk
                    if not select.select([s], [], [], 0.05)[0]:
                        continue
                    first, second = read(2)
                    length = second & 0x7F
                    if length == 126:
                        length = struct.unpack(">H", read(2))[0]
                    elif length == 127:
                        length = struct.unpack(">Q", read(8))[0]
                    payload = read(length)
                    if first & 0x0F == 9:
                        print("ping", flush=True)
                        s.sendall(frame(10, payload))
                    elif first & 0x0F == 8:
                        raise EOFError
            except (EOFError, ConnectionError):
                print("closed", flush=True)
            """#
}

/// Opens a raw WebSocket to 127.0.0.1:argv[1] as `s`, with a 4 KiB receive buffer, and prints
/// "open" once the server answered the upgrade; `seconds` is argv[2].
private let rawHandshake = #"""
    import base64, os, socket, sys, time
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(("GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: pinwheel.v1\r\n\r\n"
               % (port, key)).encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    sys.stdout.write("open\n"); sys.stdout.flush()

    """#
