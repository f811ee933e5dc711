import CLibWebSockets
import Dispatch

/// A dynamic response on its way out: its headers once `headersSent`, then `body` from `offset`.
/// Lws service thread only.
struct PendingHTTPResponse {
    var response: HTTPResponse
    var headersSent = false
    var offset = 0
}

/// A request body on its way in. Lws service thread only.
struct PendingHTTPBody {
    var request: HTTPRequest
    /// Bytes still to come, from Content-Length.
    var expected: Int
    /// The body is over the limit: its bytes are read and dropped, and the answer is 413.
    var overLimit: Bool
    /// When the body must have come; see `WebSocketServer.sweepHTTPBodies`.
    var pace: HTTPBodyPace
    /// Bytes come so far.
    var received = 0
    /// Answered 408 for being late or slow; the connection is being dropped.
    var cut = false
}

/// A route handler's answer, handed from the thread that ran it to the service thread.
struct FinishedHTTPRequest: Sendable {
    var key: UInt
    var request: UInt64
    var response: HTTPResponse
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
    case LWS_CALLBACK_FILTER_HTTP_CONNECTION:
        // Every plain HTTP request (routes and static files) once its headers are in.
        if server.filterHTTP(wsi) != 0 { return -1 }
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    case LWS_CALLBACK_HTTP:
        return server.answerHTTP(wsi)
    case LWS_CALLBACK_HTTP_BODY:
        return server.receiveHTTPBody(wsi, input, length)
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
        return server.finishHTTPBody(wsi)
    case LWS_CALLBACK_HTTP_WRITEABLE:
        return server.writeHTTPBody(wsi)
    case LWS_CALLBACK_ADD_HEADERS:
        // Lws is about to send a static file's headers.
        return server.addCrossOriginHeaders(wsi, input?.assumingMemoryBound(to: lws_process_html_args.self))
    case LWS_CALLBACK_CLOSED_HTTP:
        server.forgetHTTP(wsi)
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    case LWS_CALLBACK_FILTER_NETWORK_CONNECTION:
        // lws passes the accepted socket in `input`.
        return server.filterNewConnection(fd: Int32(truncatingIfNeeded: Int(bitPattern: input)))
    case LWS_CALLBACK_WSI_CREATE, LWS_CALLBACK_WSI_DESTROY:
        server.countConnection(created: reason == LWS_CALLBACK_WSI_CREATE)
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    default:
        return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
}

extension WebSocketServer {
    // Bytes of body per HTTP_WRITEABLE, so a large /metrics page cannot hold up the loop.
    private static let httpChunk = 16 * 1024

    /// LWS_CALLBACK_HTTP on a route mount: hands the request to its handler on another thread, so a
    /// handler that reads /proc or renders metrics never holds up the loop; the answer comes back
    /// through ``finishHTTP()``. Paths that only share the mount's prefix, and missing static files
    /// (which lws sends to the 404 document path), get 404 at once. Lws service thread only.
    func answerHTTP(_ wsi: OpaquePointer) -> Int32 {
        guard let (method, path) = Self.methodAndPath(wsi) else {
            return respond(wsi, HTTPResponse(status: 405, text: "method not served here\n"))
        }
        guard routes[path] != nil else {
            return respond(wsi, HTTPResponse(status: 404, text: "not found\n"))
        }
        var peer = [CChar](repeating: 0, count: 64)
        _ = lws_get_peer_simple(wsi, &peer, peer.count)
        var request = HTTPRequest(
            method: method, path: path, query: LWSConnection.header(wsi, WSI_TOKEN_HTTP_URI_ARGS) ?? "",
            authorization: LWSConnection.header(wsi, WSI_TOKEN_HTTP_AUTHORIZATION),
            peer: String(decoding: peer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
            origin: LWSConnection.header(wsi, WSI_TOKEN_ORIGIN), host: LWSConnection.header(wsi, WSI_TOKEN_HOST))
        request.idempotencyKey = LWSConnection.customHeader(wsi, "idempotency-key:")
        guard ["POST", "PUT", "PATCH"].contains(method) else { return dispatch(wsi, request) }
        // Bodies are read as sent: lws 4.1 decodes neither chunked transfer nor compressed content.
        if let coding = LWSConnection.header(wsi, WSI_TOKEN_HTTP_CONTENT_ENCODING),
            coding.lowercased() != "identity"
        {
            return respond(
                wsi,
                HTTPResponse(status: 415, text: "a body in Content-Encoding \(coding) is not read: send it as it is\n"))
        }
        guard let length = LWSConnection.header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH).flatMap({ Int($0) }), length >= 0
        else {
            let chunked = LWSConnection.header(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING)?.lowercased().contains("chunked")
            let why = chunked == true ? "; a chunked body is not read" : ""
            // Closed after the answer: whatever body follows would otherwise be read as the next request.
            return refuseAndClose(wsi, HTTPResponse(status: 411, text: "a \(method) needs a Content-Length\(why)\n"))
        }
        if length == 0 { return dispatch(wsi, request) }
        // Checked before a byte of the body is read: a refused producer cannot hold the connection.
        if let check = configuration.routeGuards[path], let refusal = check(request) {
            return refuseAndClose(wsi, refusal)
        }
        // Lws hands the body over in HTTP_BODY calls and ends it with HTTP_BODY_COMPLETION.
        let now = ContinuousClock.now
        let allowance = HTTPBodyPace.bodyAllowance(
            requestDeadline: configuration.httpDeadline,
            headerAllowance: HTTPBodyPace.headerAllowance(requestDeadline: configuration.httpDeadline))
        httpBodies[Self.key(wsi)] = PendingHTTPBody(
            request: request, expected: length, overLimit: length > configuration.maxRequestBodyBytes,
            pace: HTTPBodyPace(
                started: now, deadline: now + allowance, minimumRate: configuration.httpMinimumBodyRate))
        return 0
    }

    /// HTTP_BODY: keeps the bytes, or drops them once the body is known to be over the limit.
    /// Lws service thread only.
    func receiveHTTPBody(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        let key = Self.key(wsi)
        guard var pending = httpBodies[key], let input, length > 0 else { return 0 }
        if pending.cut { return -1 }
        httpBodies[key] = nil  // Modified in place below without a second copy of the body.
        pending.expected -= length
        pending.received += length
        if !pending.overLimit {
            if pending.request.body.count + length > configuration.maxRequestBodyBytes {
                pending.overLimit = true
                pending.request.body = []
            } else {
                pending.request.body.append(
                    contentsOf: UnsafeRawBufferPointer(start: input, count: length).bindMemory(to: UInt8.self))
            }
        }
        httpBodies[key] = pending
        return 0
    }

    /// HTTP_BODY_COMPLETION: the handler gets the whole body, or the client gets 413.
    /// Lws service thread only.
    func finishHTTPBody(_ wsi: OpaquePointer) -> Int32 {
        guard let pending = httpBodies.removeValue(forKey: Self.key(wsi)) else { return 0 }
        if pending.overLimit {
            let limit = configuration.maxRequestBodyBytes
            return respond(wsi, HTTPResponse(status: 413, text: "a request body may hold at most \(limit) bytes\n"))
        }
        return dispatch(wsi, pending.request)
    }

    /// FILTER_HTTP_CONNECTION: refuses a malformed request with 400 before lws acts on it.
    /// Lws service thread only.
    func filterHTTP(_ wsi: OpaquePointer) -> Int32 {
        let takesBody = Self.methodAndPath(wsi).map { ["POST", "PUT", "PATCH"].contains($0.0) && routes[$0.1] != nil }
        guard let problem = HTTPRequestRules.problem(wsi, takesBody: takesBody ?? false) else { return 0 }
        return refuseAndClose(wsi, HTTPResponse(status: 400, text: problem + "\n"))
    }

    /// The request's method and path, from whichever URI header lws filled in.
    static func methodAndPath(_ wsi: OpaquePointer) -> (String, String)? {
        let methods: [(String, lws_token_indexes)] = [
            ("GET", WSI_TOKEN_GET_URI), ("POST", WSI_TOKEN_POST_URI), ("PUT", WSI_TOKEN_PUT_URI),
            ("PATCH", WSI_TOKEN_PATCH_URI), ("DELETE", WSI_TOKEN_DELETE_URI), ("OPTIONS", WSI_TOKEN_OPTIONS_URI),
            ("HEAD", WSI_TOKEN_HEAD_URI),
        ]
        for (method, token) in methods {
            if let path = LWSConnection.header(wsi, token) { return (method, path) }
        }
        return nil
    }

    /// Starts the route's handler on a Dispatch queue; its answer, whenever the handler gives it,
    /// comes back through ``finishHTTP()``. Lws service thread only.
    private func dispatch(_ wsi: OpaquePointer, _ request: HTTPRequest) -> Int32 {
        guard let handler = routes[request.path] else {
            return respond(wsi, HTTPResponse(status: 404, text: "not found\n"))
        }
        let key = Self.key(wsi)
        lastHTTPRequest += 1
        let number = lastHTTPRequest
        httpWaiting[key] = number
        DispatchQueue.global().async { [self] in
            handler(request) { [self] response in
                finishedHTTP.withLock { $0.append(FinishedHTTPRequest(key: key, request: number, response: response)) }
                loop.wake()
            }
        }
        return 0
    }

    /// EVENT_WAIT_CANCELLED: queues the answers handlers finished for the connections still waiting
    /// for them. Lws service thread only.
    func finishHTTP() {
        let finished = finishedHTTP.withLock { list in
            defer { list.removeAll() }
            return list
        }
        for finished in finished {
            // The connection closed meanwhile, or its address now belongs to a newer request.
            guard httpWaiting[finished.key] == finished.request, let wsi = OpaquePointer(bitPattern: finished.key)
            else {
                continue
            }
            httpWaiting[finished.key] = nil
            httpResponses[finished.key] = PendingHTTPResponse(response: finished.response)
            lws_callback_on_writable(wsi)
        }
    }

    /// CLOSED_HTTP: drops what was pending for the connection. Lws service thread only.
    func forgetHTTP(_ wsi: OpaquePointer) {
        let key = Self.key(wsi)
        httpWaiting[key] = nil
        httpResponses[key] = nil
        httpBodies[key] = nil
    }

    /// Sends a response's headers now and its body from HTTP_WRITEABLE. Lws service thread only.
    private func respond(_ wsi: OpaquePointer, _ response: HTTPResponse) -> Int32 {
        httpResponses[Self.key(wsi)] = PendingHTTPResponse(response: response)
        return writeHTTPBody(wsi)
    }

    /// HTTP_WRITEABLE: the headers, then the body in chunks; the last one completes the transaction
    /// (keep-alive connections then wait for the next request). Lws service thread only.
    func writeHTTPBody(_ wsi: OpaquePointer) -> Int32 {
        let key = Self.key(wsi)
        guard var pending = httpResponses[key] else { return 0 }
        let body = pending.response.body
        if !pending.headersSent {
            guard Self.writeHeaders(wsi, pending.response) else { return -1 }
            pending.headersSent = true
            if body.isEmpty {
                httpResponses[key] = nil
                return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
            }
            httpResponses[key] = pending
            lws_callback_on_writable(wsi)
            return 0
        }
        let count = min(Self.httpChunk, body.count - pending.offset)
        let isLast = pending.offset + count == body.count
        let headroom = Int(SHIM_LWS_PRE)
        var chunk = [UInt8](repeating: 0, count: headroom + count)
        chunk.withUnsafeMutableBufferPointer { buffer in
            body.withUnsafeBufferPointer { body in
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

    // Written by hand: lws_return_http_status(404) would chase the 404 document back here.
    static func writeHeaders(_ wsi: OpaquePointer, _ response: HTTPResponse) -> Bool {
        let headroom = Int(SHIM_LWS_PRE)
        var headers = [UInt8](repeating: 0, count: headroom + 2048)
        return headers.withUnsafeMutableBufferPointer { buffer -> Bool in
            let start = buffer.baseAddress! + headroom
            var cursor: UnsafeMutablePointer<UInt8>? = start
            let end = buffer.baseAddress! + buffer.count - 1
            guard
                lws_add_http_common_headers(
                    wsi, UInt32(response.status), response.contentType, lws_filepos_t(response.body.count), &cursor,
                    end) == 0
            else { return false }
            for header in response.headers {
                let name = header.name.lowercased() + ":"
                let value = Array(header.value.utf8)
                guard lws_add_http_header_by_name(wsi, name, value, Int32(value.count), &cursor, end) == 0 else {
                    return false
                }
            }
            return lws_finalize_write_http_header(wsi, start, &cursor, end) == 0
        }
    }

    private static func key(_ wsi: OpaquePointer) -> UInt {
        UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(wsi)))
    }
}
