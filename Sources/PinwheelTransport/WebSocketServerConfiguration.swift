/// Everything a `WebSocketServer` needs to know before it binds its port.
public struct WebSocketServerConfiguration: Sendable {
    /// Address to bind: IPv4 or IPv6 ("127.0.0.1", "::1", "0.0.0.0", "::"), or a name resolved at
    /// start to its first IPv4 address, else its first IPv6 one ("localhost" is 127.0.0.1). "::"
    /// listens on IPv6 only. An address the machine does not have fails `start`.
    public var host: String = "127.0.0.1"
    /// TCP port; 0 asks the kernel for a free one (read it back from `WebSocketServer.port`).
    public var port: Int = 8080
    /// The WebSocket subprotocol served; it is also the default for clients that ask for none.
    public var subprotocol: String = "pinwheel.v1"
    /// More subprotocols a client may ask for by name, each with its largest message in bytes
    /// (instead of `maxMessageBytes`). `ConnectionInfo.subprotocol` says which one a client chose.
    public var otherSubprotocols: [String: Int] = [:]
    /// Directories served over HTTP, matched by URL prefix (longest first).
    public var staticMounts: [StaticMount] = []
    /// Dynamic HTTP handlers for exact paths (e.g. "/healthz"); they run on a Dispatch queue, never on
    /// the lws service thread.
    public var routes: [String: HTTPHandler] = [:]
    /// Dynamic HTTP handlers for exact paths that answer through a completion (``HTTPDeferredHandler``);
    /// a path is in `routes` or here, not both.
    public var deferredRoutes: [String: HTTPDeferredHandler] = [:]
    /// Largest request body a route accepts (POST, PUT, PATCH); a larger one is read, dropped and
    /// answered with 413, and a body without Content-Length with 411, before any handler runs.
    public var maxRequestBodyBytes: Int = 1024 * 1024
    /// Which browser origins may open a WebSocket; a refused upgrade gets 403 with the reason.
    public var allowedOrigins: OriginRule = .sameOrigin
    /// Largest text message accepted, in bytes after permessage-deflate inflation; bigger closes with 1009.
    public var maxMessageBytes: Int = 64 * 1024
    /// Largest outbound queue per connection, in bytes; a send past it closes the connection with 1008.
    public var maxQueuedBytesPerConnection: Int = 4 * 1024 * 1024
    /// Most connections, WebSocket and HTTP together, held at once; past it a new connection is closed
    /// at once (after a best-effort 503). nil: the descriptor limit less a reserve (``DescriptorBudget``).
    public var maxConnections: Int? = nil
    /// The frame budget (pings included) and the idle timeout; nil: neither.
    public var framePolicy: FramePolicy? = FramePolicy()
    /// Pings idle connections and hangs up on silent ones; nil disables both.
    public var keepalive: Keepalive? = Keepalive()
    /// Serve https/wss with these PEM files; nil serves plain http/ws.
    public var tls: TLSFiles? = nil
    /// The event loop lws runs on; `.libev` scales to many thousands of connections.
    public var eventLoop: EventLoopBackend = .poll
    /// Negotiate permessage-deflate with clients that offer it.
    public var permessageDeflate: Bool = true
    /// Largest single lws_write, in bytes (0 would cap every send at the 4 KiB rx buffer).
    public var txPacketSize: Int = 64 * 1024
    /// Messages written per WRITEABLE callback at most, so one busy connection cannot starve the rest.
    public var writesPerWritable: Int = 8
    /// How long a closing connection may take to complete the close handshake (take our Close and
    /// answer it, or take the answer to its own) before the server drops it: a peer that stopped
    /// reading never would, and RFC 6455 §7.1.1 wants the server to close TCP promptly.
    public var closeTimeout: Duration = .milliseconds(500)
    /// How long `stop` waits for clients to answer the 1001 close before dropping them.
    public var stopTimeout: Duration = .seconds(2)
    /// The most time one HTTP request may take, headers and body together. The headers get at most
    /// half of it, up to 10 s (lws's header timeout); a body still arriving when the rest runs out
    /// is answered 408 and the connection closed. Whole seconds, 2 to 3600.
    public var httpDeadline: Duration = .seconds(30)
    /// Bytes per second a request body must keep up, on average, from 2 s after its headers; a
    /// slower one is answered 408 and closed. 0 turns the floor off (the deadline still holds).
    public var httpMinimumBodyRate: Int = 1024
    /// Checks run when a route's request headers are complete, before its body is read: a response
    /// refuses the request (it is sent, and the connection closed unread). On the lws service
    /// thread, so they must be quick (a token comparison, not I/O).
    public var routeGuards: [String: HTTPGuard] = [:]
    /// lws log levels (LLL_* bits) sent to stderr; the default keeps errors only.
    public var lwsLogLevels: Int32 = 1

    public init() {}
}

/// A directory served over HTTP under a URL prefix.
public struct StaticMount: Sendable, Equatable {
    /// URL prefix without trailing slash except for the root, e.g. "/" or "/vendor/leaflet".
    public var urlPath: String
    /// Directory on disk; relative paths resolve from the working directory.
    public var directory: String
    /// File served for a request naming the directory itself.
    public var defaultFile: String
    /// Whether pages of other origins may read the files (ES modules imported across origins need
    /// it): a request whose `Origin` the server's ``OriginPolicy`` allows gets
    /// `Access-Control-Allow-Origin` naming it, and every answer says `Vary: Origin`.
    public var crossOrigin: Bool

    public init(urlPath: String, directory: String, defaultFile: String = "index.html", crossOrigin: Bool = false) {
        self.urlPath = urlPath
        self.directory = directory
        self.defaultFile = defaultFile
        self.crossOrigin = crossOrigin
    }
}

/// Which `Origin` header values may open a WebSocket. Requests without an Origin header come from
/// non-browser clients and are admitted by the first three; an empty one is refused.
public enum OriginRule: Sendable {
    /// Only the server's own origin: scheme plus the request's Host header, e.g. "http://127.0.0.1:8080".
    case sameOrigin
    /// Exactly these origins (e.g. "https://maps.example.org"), compared case-insensitively.
    case allowList([String])
    /// Any origin; for tests and trusted networks.
    case any
    /// The function decides: given the Origin and Host headers (nil when absent), nil admits and a
    /// reason refuses. Runs on the lws service thread, so it must be quick.
    case checkedBy(@Sendable (_ origin: String?, _ host: String?) -> String?)
}

/// The idle policy: a ping after `pingAfter` of silence, hang up after `hangUpAfter`. Anything the
/// peer sends, a pong included, ends a silence; pings and hang-ups come up to 250 ms late.
public struct Keepalive: Sendable, Equatable {
    /// Silence before the server sends a ping (whole seconds, at most 65535).
    public var pingAfter: Duration
    /// Silence before the server drops the connection (whole seconds, at most 65535).
    public var hangUpAfter: Duration

    public init(pingAfter: Duration = .seconds(30), hangUpAfter: Duration = .seconds(75)) {
        self.pingAfter = pingAfter
        self.hangUpAfter = hangUpAfter
    }
}

/// PEM files for TLS.
public struct TLSFiles: Sendable, Equatable {
    public var certificatePath: String
    public var privateKeyPath: String

    public init(certificatePath: String, privateKeyPath: String) {
        self.certificatePath = certificatePath
        self.privateKeyPath = privateKeyPath
    }
}

/// The event loop under lws.
public enum EventLoopBackend: String, Sendable, Equatable, CaseIterable, Codable {
    /// lws's built-in poll(2) loop; fine for hundreds of connections.
    case poll
    /// libev (Debian package libwebsockets-evlib-ev); epoll underneath, for thousands.
    case libev
}
