import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A real `nats-server` with JetStream on 127.0.0.1 and a free port, its store in a temporary folder;
/// stopped and removed when the value goes away.
final class NATSServerProcess {
    let port: Int
    let store = NSTemporaryDirectory() + "pinwheel-nats-\(UUID().uuidString)"
    private let process = Process()

    var url: String { "nats://127.0.0.1:\(port)" }

    init() throws {
        port = Self.freePort()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nats-server")
        if !FileManager.default.isExecutableFile(atPath: "/usr/sbin/nats-server") {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/nats-server")
        }
        process.arguments = ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", store]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + .seconds(10)
        while !Self.accepts(port) {
            guard ContinuousClock.now < deadline else { throw CocoaError(.fileReadUnknown) }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Sends the server a signal: SIGSTOP freezes it (its sockets stay open and unanswered), SIGCONT
    /// resumes it.
    func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    deinit {
        kill(process.processIdentifier, SIGCONT)
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: store)
    }

    /// A port the kernel says is free now.
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts TCP connections on the port.
    static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        return withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }
}
