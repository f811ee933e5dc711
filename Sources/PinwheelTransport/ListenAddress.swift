import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The one address the server listens on: `host` resolved once at start, handed to lws as a numeric
/// address (never an interface name), and read back from the kernel once bound.
///
/// lws 4.1.6 takes its vhost `iface` as an interface name or a numeric address. A name it does not
/// know as an interface (`localhost`) makes it listen on nothing, and with IPv6 on, a numeric IPv4
/// address is written where an IPv6 one belongs, so it binds `[::]`, every interface of both
/// families. Hence the address is resolved here, IPv4 addresses get a vhost with IPv6 off, and
/// IPv6 ones a socket restricted to IPv6 (`::` is not also `0.0.0.0`). Any thread.
struct ListenAddress: Equatable {
    enum Family: Equatable {
        case ipv4, ipv6
    }

    var family: Family
    /// The numeric form, e.g. "127.0.0.1" or "::1".
    var numeric: String

    /// Resolves `host`: a numeric IPv4 or IPv6 address (brackets allowed) stands for itself; a name
    /// stands for its first IPv4 address, or its first IPv6 address when it has none (so
    /// `localhost` is 127.0.0.1).
    /// - Throws: `TransportError.invalidConfiguration` naming `host` when it does not resolve.
    static func resolve(_ host: String) throws -> ListenAddress {
        var name = host
        if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(name, nil, &hints, &list)
        guard status == 0, let list else {
            throw TransportError.invalidConfiguration(
                field: "host", value: "\(host) (does not resolve: \(String(cString: gai_strerror(status))))")
        }
        defer { freeaddrinfo(list) }
        var ipv4: ListenAddress?
        var ipv6: ListenAddress?
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            if let address = current.pointee.ai_addr, let found = Self.numeric(address) {
                if found.family == .ipv4, ipv4 == nil { ipv4 = found }
                if found.family == .ipv6, ipv6 == nil { ipv6 = found }
            }
            entry = current.pointee.ai_next
        }
        guard let chosen = ipv4 ?? ipv6 else {
            throw TransportError.invalidConfiguration(field: "host", value: "\(host) (no IPv4 or IPv6 address)")
        }
        return chosen
    }

    /// "127.0.0.1:8080" or "[::1]:8080".
    func withPort(_ port: Int) -> String {
        family == .ipv6 ? "[\(numeric)]:\(port)" : "\(numeric):\(port)"
    }

    /// The descriptors of this process's listening TCP sockets (IPv4 and IPv6).
    static func listeningSockets() -> Set<Int32> {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        var found: Set<Int32> = []
        for entry in entries {
            guard let fd = Int32(entry) else { continue }
            var listening: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0, listening == 1,
                bound(fd) != nil
            else { continue }
            found.insert(fd)
        }
        return found
    }

    /// The address and port the kernel bound `fd` to (getsockname), nil for a non-IP socket.
    static func bound(_ fd: Int32) -> (address: ListenAddress, port: Int)? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                guard getsockname(fd, address, &length) == 0, let found = numeric(address) else { return nil }
                let port =
                    found.family == .ipv4
                    ? address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port }
                    : address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port }
                return (found, Int(UInt16(bigEndian: port)))
            }
        }
    }

    /// Why binding this address to `port` fails, from a bind of our own (errno's text), or nil when it
    /// would succeed: lws reports only that it could not.
    func bindFailure(port: Int) -> String? {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(numeric, String(port), &hints, &list) == 0, let list else { return nil }
        defer { freeaddrinfo(list) }
        let fd = socket(list.pointee.ai_family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        defer { close(fd) }
        var on: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
        return bind(fd, list.pointee.ai_addr, list.pointee.ai_addrlen) == 0 ? nil : String(cString: strerror(errno))
    }

    private static func string(_ text: [CChar]) -> String {
        String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func numeric(_ address: UnsafePointer<sockaddr>) -> ListenAddress? {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(address.pointee.sa_family) {
        case AF_INET:
            let ok = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                withUnsafePointer(to: v4.pointee.sin_addr) { inet_ntop(AF_INET, $0, &text, socklen_t(text.count)) }
            }
            return ok == nil ? nil : ListenAddress(family: .ipv4, numeric: Self.string(text))
        case AF_INET6:
            let ok = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                withUnsafePointer(to: v6.pointee.sin6_addr) { inet_ntop(AF_INET6, $0, &text, socklen_t(text.count)) }
            }
            return ok == nil ? nil : ListenAddress(family: .ipv6, numeric: Self.string(text))
        default:
            return nil
        }
    }
}
