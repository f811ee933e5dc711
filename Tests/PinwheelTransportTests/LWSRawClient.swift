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

    private static let script = #"""
        import base64, os, socket, sys, time
        port, seconds = int(sys.argv[1]), int(sys.argv[2])
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
        time.sleep(seconds)
        """#
}
