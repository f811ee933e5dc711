import CLibWebSockets

extension WebSocketServer {
    /// Sends `response` at once with `Connection: close` and tells lws to drop the connection, body
    /// unread: for requests refused at their headers (malformed, a guard's refusal, a refused
    /// upgrade) and for bodies cut by their deadline. Returns -1, what the callback returns to close.
    /// Lws service thread only.
    @discardableResult
    func refuseAndClose(_ wsi: OpaquePointer, _ response: HTTPResponse) -> Int32 {
        var response = response
        // HTTP/2 forbids connection headers (RFC 9113 section 8.2.2): a client would reject the
        // whole response. There only the stream ends; an h2 stream is not its network connection.
        if lws_get_network_wsi(wsi) == wsi {
            response.headers.append(HTTPHeader("Connection", "close"))
        }
        guard Self.writeHeaders(wsi, response), !response.body.isEmpty else { return -1 }
        let headroom = Int(SHIM_LWS_PRE)
        var buffer = [UInt8](repeating: 0, count: headroom) + response.body
        _ = buffer.withUnsafeMutableBufferPointer { buffer in
            lws_write(wsi, buffer.baseAddress! + headroom, response.body.count, LWS_WRITE_HTTP_FINAL)
        }
        return -1
    }

    /// Cuts the request bodies past their deadline or behind the minimum rate: each gets 408 and its
    /// connection is closed. Runs at most every ``httpSweepInterval``. Lws service thread only.
    func sweepHTTPBodies(at now: ContinuousClock.Instant) {
        guard now >= nextHTTPSweep else { return }
        nextHTTPSweep = now + Self.httpSweepInterval
        for (key, pending) in httpBodies where !pending.cut {
            let received = pending.received
            let why: String
            switch pending.pace.verdict(received: received, at: now) {
            case .onTime: continue
            case .pastDeadline:
                let seconds = configuration.httpDeadline.components.seconds
                why =
                    "the request took longer than \(seconds) s: \(received) of \(received + pending.expected) body bytes came"
            case .tooSlow:
                why = "the body came slower than \(configuration.httpMinimumBodyRate) bytes/s"
            }
            guard let wsi = OpaquePointer(bitPattern: key) else { continue }
            httpBodies[key]?.cut = true
            refuseAndClose(wsi, HTTPResponse(status: 408, text: why + "\n"))
            // Closed from outside its own callback: lws drops it on its next pass.
            lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, LWS_TO_KILL_ASYNC)
        }
    }

    /// How often request bodies are checked against their deadline and rate.
    static let httpSweepInterval: Duration = .milliseconds(250)
}
