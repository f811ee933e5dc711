import CLibWebSockets

/// A dynamic response on its way out: headers are sent, `body` from `offset` is not. Lws service thread only.
struct PendingHTTPResponse {
    var body: [UInt8]
    var offset = 0
}

/// The C callback of protocols[0]: route mounts reach the server; everything else (static files,
/// upgrades) goes to lws's own HTTP handling. Non-capturing. Lws service thread only.
func serverHTTPCallback(
    wsi: OpaquePointer?, reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
    input: UnsafeMutableRawPointer?, length: Int
) -> Int32 {
    guard let wsi, let server = WebSocketServer.owner(of: wsi) else {
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
    switch reason {
    case LWS_CALLBACK_HTTP:
        return server.answerHTTP(wsi)
    case LWS_CALLBACK_HTTP_WRITEABLE:
        return server.writeHTTPBody(wsi)
    case LWS_CALLBACK_CLOSED_HTTP:
        server.httpResponses[UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(wsi)))] = nil
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    default:
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
}

extension WebSocketServer {
    // Bytes of body per HTTP_WRITEABLE, so a large /metrics page cannot hold up the loop.
    private static let httpChunk = 16 * 1024

    /// LWS_CALLBACK_HTTP on a route mount: runs the handler and sends the headers; the body follows
    /// in HTTP_WRITEABLE. Paths that only share the mount's prefix, and missing static files (which
    /// lws sends to the 404 document path), get 404. Lws service thread only.
    func answerHTTP(_ wsi: OpaquePointer) -> Int32 {
        let response: HTTPResponse
        if let path = LWSConnection.header(wsi, WSI_TOKEN_GET_URI) {
            let query = LWSConnection.header(wsi, WSI_TOKEN_HTTP_URI_ARGS) ?? ""
            response =
                routes[path]?(HTTPRequest(path: path, query: query)) ?? HTTPResponse(status: 404, text: "not found\n")
        } else {
            response = HTTPResponse(status: 405, text: "only GET is served here\n")
        }
        // Written by hand: lws_return_http_status(404) would chase the 404 document back here.
        let headroom = Int(SHIM_LWS_PRE)
        var headers = [UInt8](repeating: 0, count: headroom + 2048)
        let failed = headers.withUnsafeMutableBufferPointer { buffer -> Bool in
            let start = buffer.baseAddress! + headroom
            var cursor: UnsafeMutablePointer<UInt8>? = start
            let end = buffer.baseAddress! + buffer.count - 1
            return lws_add_http_common_headers(
                wsi, UInt32(response.status), response.contentType, lws_filepos_t(response.body.count), &cursor, end)
                != 0
                || lws_finalize_write_http_header(wsi, start, &cursor, end) != 0
        }
        if failed { return 1 }
        if response.body.isEmpty {
            return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
        }
        httpResponses[Self.key(wsi)] = PendingHTTPResponse(body: response.body)
        lws_callback_on_writable(wsi)
        return 0
    }

    /// HTTP_WRITEABLE: the next chunk of a pending body; the last one completes the transaction
    /// (keep-alive connections then wait for the next request). Lws service thread only.
    func writeHTTPBody(_ wsi: OpaquePointer) -> Int32 {
        let key = Self.key(wsi)
        guard var pending = httpResponses[key] else { return 0 }
        let count = min(Self.httpChunk, pending.body.count - pending.offset)
        let isLast = pending.offset + count == pending.body.count
        let headroom = Int(SHIM_LWS_PRE)
        var chunk = [UInt8](repeating: 0, count: headroom + count)
        chunk.withUnsafeMutableBufferPointer { buffer in
            pending.body.withUnsafeBufferPointer { body in
                (buffer.baseAddress! + headroom).update(from: body.baseAddress! + pending.offset, count: count)
            }
        }
        let written = chunk.withUnsafeMutableBufferPointer { buffer in
            lws_write(wsi, buffer.baseAddress! + headroom, count, isLast ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP)
        }
        if written < 0 { return -1 }
        if isLast {
            httpResponses[key] = nil
            return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
        }
        pending.offset += count
        httpResponses[key] = pending
        lws_callback_on_writable(wsi)
        return 0
    }

    private static func key(_ wsi: OpaquePointer) -> UInt {
        UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(wsi)))
    }
}
