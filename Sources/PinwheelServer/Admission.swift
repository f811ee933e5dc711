import Foundation
import PinwheelCore
import PinwheelTransport

/// `GET /v1/admission`: whether a page of the request's origin may open a WebSocket, and if not,
/// why. A browser is told nothing of a refused upgrade; the client asks here after a WebSocket
/// failed before opening, so its page can say why instead of retrying for ever.
enum Admission {
    static let path = "/v1/admission"

    /// 200 `{"allowed":true}`, or 403 `{"allowed":false,"reason":…}` for an origin `policy` refuses:
    /// the request's `Origin`, or the `origin` parameter when it has none (browsers send no `Origin`
    /// with a GET to the page's own origin). Any page may read it (`Access-Control-Allow-Origin: *`),
    /// and no cache keeps it.
    static func answer(_ request: HTTPRequest, policy: OriginPolicy) -> HTTPResponse {
        let headers = [HTTPHeader("Access-Control-Allow-Origin", "*"), HTTPHeader("Cache-Control", "no-store")]
        guard request.method == "GET" || request.method == "HEAD" else {
            return HTTPResponse(status: 405, text: "\(path) answers GET\n", headers: headers)
        }
        let origin = request.origin ?? parameter("origin", in: request.query)
        guard case .refused(let reason) = policy.allows(origin: origin, host: request.host) else {
            return HTTPResponse(contentType: "application/json", text: #"{"allowed":true}"# + "\n", headers: headers)
        }
        var writer = JSONWriter(capacity: 128)
        writer.raw(#"{"allowed":false,"reason":"#)
        writer.string(reason)
        writer.raw("}\n")
        return HTTPResponse(status: 403, contentType: "application/json", body: writer.bytes, headers: headers)
    }

    /// The first value of `name` in a query string, percent-decoded; nil when absent.
    static func parameter(_ name: String, in query: String) -> String? {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            return String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return nil
    }
}
