import PinwheelCore
import PinwheelTransport

/// `POST /v1/changes`: producers' changes over HTTP (see docs/protocol.md).
extension HTTPRoutes {
    /// Answers one ingest request through `respond`, once the accepted changes are durable: a route
    /// handler's thread checks the request and hands it to the log, and the log's thread answers.
    func answerChanges(_ request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        if let refusal = refuseChanges(request) { return respond(refusal) }
        guard let ingest else { return respond(Self.error(503, "ingest is off")) }
        let atomic = request.query.split(separator: "&").contains("atomic=true")
        ingest.submit(
            request.body, producer: request.peer, atomic: atomic, key: request.idempotencyKey,
            tenant: ingest.grant(for: request.authorization)?.tenant,
            received: request.received, holdsAtMost: IngestSharing.longestHeldRequest
        ) { [self] outcome in
            respond(response(to: outcome, from: ingest))
        }
    }

    /// The HTTP answer to an ingest outcome. Any thread.
    private func response(to outcome: Ingest.Outcome, from ingest: Ingest) -> HTTPResponse {
        switch outcome {
        case .answered(let status, let answer):
            metrics.changesAccepted(answer.accepted)
            return HTTPResponse(status: status, contentType: "application/json", body: answer.json())
        case .tooFast(let retryAfter):
            return Self.error(
                429,
                "over \(Int(ingest.rate)) changes per second, or over this producer's share of the CPU while viewers are connected; retry after \(retryAfter) s",
                headers: [HTTPHeader("Retry-After", String(retryAfter))])
        case .failed(let reason):
            logger.error("ingest: \(reason)")
            return Self.error(503, reason)
        case .refused(let status, let reason):
            if status == 503 { logger.warning("ingest: \(reason)") }
            return Self.error(status, reason)
        }
    }

    /// The answer to an ingest request that may not go on (ingest off, not a POST, no valid token),
    /// from its headers alone: the transport runs it before reading the body, the handler again.
    /// Any thread; quick.
    func refuseChanges(_ request: HTTPRequest) -> HTTPResponse? {
        guard let ingest else {
            return Self.error(
                404,
                "this server takes no changes: start it with --data-dir and --ingest-token-file or --producer-tokens")
        }
        guard request.method == "POST" else {
            return Self.error(405, "send changes with POST", headers: [HTTPHeader("Allow", "POST")])
        }
        guard ingest.authorizes(request.authorization) else {
            return Self.error(
                401, "a valid token is needed: Authorization: Bearer <token>",
                headers: [HTTPHeader("WWW-Authenticate", "Bearer")])
        }
        return nil
    }

    /// `{"error":"..."}` with a status.
    static func error(_ status: Int, _ message: String, headers: [HTTPHeader] = []) -> HTTPResponse {
        var w = JSONWriter(capacity: 64 + message.utf8.count)
        w.raw("{\"error\":")
        w.string(message)
        w.byte(UInt8(ascii: "}"))
        return HTTPResponse(status: status, contentType: "application/json", body: w.bytes, headers: headers)
    }
}
