/// A dynamic HTTP request as a route handler sees it.
public struct HTTPRequest: Sendable, Equatable {
    /// "GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS" or "HEAD".
    public var method: String = "GET"
    /// The exact path that matched the route, e.g. "/metrics".
    public var path: String
    /// The query string without "?", empty when there is none.
    public var query: String
    /// The request's `Authorization` header, nil when absent.
    public var authorization: String?
    /// The peer's address, e.g. "127.0.0.1".
    public var peer: String = ""
    /// The request's `Origin` header (a browser's page asking from script), nil when absent.
    public var origin: String?
    /// The request's `Host` header, nil when absent.
    public var host: String?
    /// The body of a POST, PUT or PATCH, at most the server's `maxRequestBodyBytes`.
    public var body: [UInt8] = []
    /// The request's `Idempotency-Key` header, nil when absent.
    public var idempotencyKey: String?
    /// When the server began to handle the request (its headers were read).
    public var received: ContinuousClock.Instant = .now

    public init(
        method: String = "GET", path: String, query: String = "", authorization: String? = nil, peer: String = "",
        origin: String? = nil, host: String? = nil, body: [UInt8] = []
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.authorization = authorization
        self.peer = peer
        self.origin = origin
        self.host = host
        self.body = body
    }
}

/// A complete HTTP response from a route handler.
public struct HTTPResponse: Sendable, Equatable {
    /// Status code, e.g. 200.
    public var status: Int
    /// Content-Type header, e.g. "text/plain; version=0.0.4".
    public var contentType: String
    /// The whole body.
    public var body: [UInt8]
    /// Headers besides Content-Type and Content-Length, e.g. `("Retry-After", "2")`.
    public var headers: [HTTPHeader]

    public init(status: Int = 200, contentType: String, body: [UInt8], headers: [HTTPHeader] = []) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.headers = headers
    }

    public init(
        status: Int = 200, contentType: String = "text/plain; charset=utf-8", text: String, headers: [HTTPHeader] = []
    ) {
        self.init(status: status, contentType: contentType, body: Array(text.utf8), headers: headers)
    }
}

/// One response header.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// Answers one HTTP request. Runs on a Dispatch global queue, never on the lws service thread, so it
/// may read files or render metrics; the transport sends the answer when it returns.
public typealias HTTPHandler = @Sendable (HTTPRequest) -> HTTPResponse

/// Answers one HTTP request through `respond`, which it calls exactly once, from any thread, when the
/// answer is ready: work that waits on something else (a log's append made durable) holds no thread
/// meanwhile. Starts on a Dispatch global queue, never on the lws service thread.
public typealias HTTPDeferredHandler = @Sendable (HTTPRequest, @escaping @Sendable (HTTPResponse) -> Void) -> Void

/// Looks at a route request's method, path and headers (its body is still unread) and returns a
/// response to refuse it, or nil to go on. Runs on the lws service thread: quick checks only.
public typealias HTTPGuard = @Sendable (HTTPRequest) -> HTTPResponse?
