import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A blocking HTTP/1.0 request over a TCP socket, one connection each: enough to read a server's
/// `/metrics` or post changes to it without pulling in an HTTP client library.
public enum HTTPExchange {
    public struct Failure: Error, CustomStringConvertible {
        public var reason: String
        public var description: String { reason }
    }

    /// A response: status, headers (names lower-cased) and body.
    public struct Reply: Sendable {
        public var status: Int
        public var headers: [String: String]
        public var body: [UInt8]
    }

    /// The raw response (status line, headers, body) to a GET, read until the server closes.
    static func fetch(host: String, port: Int, path: String, timeout: Duration) throws(Failure) -> String {
        String(
            decoding: try exchange(
                host: host, port: port, head: "GET \(path) HTTP/1.0\r\n", body: [], timeout: timeout), as: UTF8.self)
    }

    /// Sends a request with a body and reads the reply.
    public static func send(
        _ method: String, host: String, port: Int, path: String, headers: [(String, String)] = [], body: [UInt8],
        timeout: Duration
    ) throws(Failure) -> Reply {
        var head = "\(method) \(path) HTTP/1.0\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let raw = try exchange(host: host, port: port, head: head, body: body, timeout: timeout)
        guard let end = raw.firstRange(of: Array("\r\n\r\n".utf8)) else {
            throw Failure(reason: "no end of headers in a \(raw.count)-byte response")
        }
        let lines = String(decoding: raw[..<end.lowerBound], as: UTF8.self).split(separator: "\r\n")
        let parts = lines.first?.split(separator: " ") ?? []
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw Failure(reason: "bad status line \"\(lines.first ?? "")\"")
        }
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Reply(status: status, headers: fields, body: Array(raw[end.upperBound...]))
    }

    private static func exchange(host: String, port: Int, head: String, body: [UInt8], timeout: Duration)
        throws(Failure) -> [UInt8]
    {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw Failure(reason: "getaddrinfo: \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { throw Failure(reason: "socket: errno \(errno)") }
        defer { close(fd) }
        let (seconds, attos) = timeout.components
        var limit = timeval(tv_sec: Int(seconds), tv_usec: Int(attos / 1_000_000_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            throw Failure(reason: "connect: errno \(errno)")
        }
        let request = Array("\(head)Host: \(host):\(port)\r\nConnection: close\r\n\r\n".utf8) + body
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(reason: "send: errno \(errno)") }
            sent += n
        }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            guard n > 0 else { throw Failure(reason: "recv: errno \(errno)") }
            response.append(contentsOf: chunk[0..<n])
            if response.count > 64 << 20 { throw Failure(reason: "response over 64 MiB") }
            // A server that keeps the socket open is done once Content-Length bytes arrived.
            if let expected = completeLength(response), response.count >= expected { break }
        }
        return response
    }

    /// Header length plus Content-Length, once the headers are in and name a length.
    private static func completeLength(_ response: [UInt8]) -> Int? {
        let text = String(decoding: response.prefix(8192), as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n") else { return nil }
        let headers = text[..<end.lowerBound].lowercased()
        guard let field = headers.range(of: "\r\ncontent-length:") else { return nil }
        let digits = headers[field.upperBound...].prefix { $0 != "\r" }.trimmingCharacters(in: .whitespaces)
        guard let length = Int(digits) else { return nil }
        return text.utf8.distance(from: text.startIndex, to: end.upperBound) + length
    }
}
