import CLibWebSockets
import CPermessageDeflate

/// Builds the C structures a context points at, in `CStorage` so they outlive the context.
/// Whatever thread creates the context, before the service thread exists.
enum LWSContextParts {
    /// Context options for the chosen event loop.
    static func eventLoopOptions(_ backend: EventLoopBackend) -> UInt64 {
        switch backend {
        case .poll: return 0
        case .libev: return UInt64(LWS_SERVER_OPTION_LIBEV)
        }
    }

    /// A retry policy that turns lws's validity timer off (a zero hang-up time). Without one lws
    /// uses its default (a ping after 300 s) and files every connection's deadline, as it opens,
    /// into one list sorted by time, walking it from the front: at 10,000 connections those walks
    /// took a quarter of the server's CPU and a third of the load tool's. The server keeps its own
    /// keepalive (``KeepaliveSweep``); a client relies on the server's.
    static func noValidityTimer(in storage: CStorage) -> UnsafePointer<lws_retry_bo_t> {
        UnsafePointer(storage.value(lws_retry_bo_t()))
    }

    /// The extension list: permessage-deflate answered by Pinwheel's own callback, whose messages
    /// arrive still compressed for `MessageAssembler` to inflate whole and leave compressed by
    /// `MessageDeflate`; or none.
    static func extensions(deflate: Bool) -> UnsafePointer<lws_extension>? {
        deflate ? permessage_deflate_extensions() : nil
    }

    /// The server's WebSocket rx buffer, allocated per connection for its whole life (lws's default is
    /// 4 KiB). Messages arrive in chunks of at most this size and `MessageAssembler` joins them up to
    /// `maxMessageBytes`, and control frames carry at most 125 bytes.
    static let webSocketRxBufferSize = 1024

    /// A protocol entry without its callback: the caller assigns a top-level function directly,
    /// the only form Swift turns into a C function pointer.
    static func protocolEntry(name: String, txPacketSize: Int, in storage: CStorage) -> lws_protocols {
        var entry = lws_protocols()
        entry.name = storage.string(name)
        entry.per_session_data_size = 0
        // 0 keeps lws's 4 KiB default; the server's WebSocket protocols set theirs.
        entry.rx_buffer_size = 0
        entry.tx_packet_size = txPacketSize
        return entry
    }

    /// The security headers of every HTTP response: lws's best-practice set, except that images may
    /// come from any http(s) server, so a page given `?tiles=` can draw a raster tile server's tiles.
    static func securityHeaders(in storage: CStorage) -> UnsafePointer<lws_protocol_vhost_options> {
        let headers: [(String, String)] = [
            ("referrer-policy:", "no-referrer"),
            ("x-frame-options:", "deny"),
            ("x-content-type-options:", "nosniff"),
            (
                "content-security-policy:",
                "default-src 'none'; img-src 'self' data: https: http:; script-src 'self'; font-src 'self'; "
                    + "style-src 'self'; connect-src 'self' ws: wss:; frame-ancestors 'none'; base-uri 'none'; "
                    + "form-action 'self';"
            ),
        ]
        var next: UnsafePointer<lws_protocol_vhost_options>?
        for (name, value) in headers.reversed() {
            var option = lws_protocol_vhost_options()
            option.next = next
            option.name = storage.string(name)
            option.value = storage.string(value)
            next = UnsafePointer(storage.value(option))
        }
        return next!
    }
}
