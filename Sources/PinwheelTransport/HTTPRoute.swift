/// A dynamic HTTP request as a route handler sees it.
public struct HTTPRequest: Sendable, Equatable {
    /// The exact path that matched the route, e.g. "/metrics".
    public var path: String
    /// The query string without "?", empty when there is none.
    public var query: String
}

/// A complete HTTP response from a route handler.
public struct HTTPResponse: Sendable, Equatable {
    /// Status code, e.g. 200.
    public var status: Int
    /// Content-Type header, e.g. "text/plain; version=0.0.4".
    public var contentType: String
    /// The whole body.
    public var body: [UInt8]

    public init(status: Int = 200, contentType: String, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    public init(status: Int = 200, contentType: String = "text/plain; charset=utf-8", text: String) {
        self.init(status: status, contentType: contentType, body: Array(text.utf8))
    }
}

/// Answers one HTTP request. Runs on a Dispatch global queue, never on the lws service thread, so it
/// may read files or render metrics; the transport sends the answer when it returns.
public typealias HTTPHandler = @Sendable (HTTPRequest) -> HTTPResponse
