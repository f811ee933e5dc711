import Foundation
import Logging
import PinwheelTransport
import Synchronization

/// The server's own HTTP routes: `/healthz`, `/metrics`, `/v1/admission` and `POST /v1/changes`
/// (``answerChanges(_:respond:)``). The transport runs each route's handler on a Dispatch thread,
/// off the service thread; the only state here is whether the node is draining, an atomic.
final class HTTPRoutes: @unchecked Sendable {
    let metrics: ServerMetrics
    let logger: Logger
    /// Producers' way in; nil unless a token is configured.
    let ingest: Ingest?
    private let live: LiveData?
    private let filters: FilterRegistry
    /// The full index, whose bytes `/metrics` sets the filtered indexes' against.
    private let served: ServedClusterers
    let policy: OriginPolicy
    /// Set by ``drain()``: `/healthz` answers 503 so a load balancer sends new sessions elsewhere.
    private let draining = Atomic<Bool>(false)
    /// The transport whose counters `/metrics` shows; set once, before the transport starts.
    weak var transport: WebSocketServer?

    init(
        metrics: ServerMetrics, logger: Logger, ingest: Ingest?, live: LiveData?, filters: FilterRegistry,
        served: ServedClusterers, policy: OriginPolicy
    ) {
        self.metrics = metrics
        self.logger = logger
        self.ingest = ingest
        self.live = live
        self.filters = filters
        self.served = served
        self.policy = policy
    }

    /// `/healthz` answers 503 `draining` from now on; any thread.
    func drain() {
        draining.store(true, ordering: .releasing)
    }

    /// Adds the routes to the transport's configuration.
    func install(into c: inout WebSocketServerConfiguration) {
        c.routes["/healthz"] = { [weak self] _ in
            guard let self, !draining.load(ordering: .acquiring) else {
                return HTTPResponse(status: 503, text: "draining\n")
            }
            // A node that cannot keep changes (a full disk, or a replicated log that lost its
            // server) is out of a load balancer's rotation; its open sessions go on being served.
            if let problem = live?.log.appendProblem { return HTTPResponse(status: 503, text: "\(problem)\n") }
            return HTTPResponse(text: "ok\n")
        }
        c.routes["/metrics"] = { [weak self] _ in
            guard let self, let transport else { return HTTPResponse(status: 503, text: "stopping\n") }
            let stats = transport.stats
            let text =
                metrics.render(queuedBytes: stats.queuedBytes)
                + ((live?.log as? ChangeLogHealth)?.metricsText ?? "") + (ingest?.metricsText ?? "")
                + ConnectionLimitMetrics.text(transport.connectionLimits)
                + filters.metricsText(full: served.clusterer(for: served.algorithm))
            return HTTPResponse(contentType: "text/plain; version=0.0.4; charset=utf-8", text: text)
        }
        // Answered once the log has the changes durably; no thread waits for it meanwhile.
        c.deferredRoutes["/v1/changes"] = { [weak self] request, respond in
            guard let self else { return respond(HTTPResponse(status: 503, text: "stopping\n")) }
            answerChanges(request, respond: respond)
        }
        // A producer without the token is refused before its body is read.
        c.routeGuards["/v1/changes"] = { [weak self] request in self?.refuseChanges(request) }
        let policy = policy
        c.routes[Admission.path] = { request in Admission.answer(request, policy: policy) }
    }
}
