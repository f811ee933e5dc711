import Testing

@testable import PinwheelServer
@testable import PinwheelTransport

@Suite("Admission")
struct AdmissionTests {
    func answer(
        _ origin: String?, allowing extra: [String] = [], host: String? = "127.0.0.1:8080", query: String = ""
    ) -> (Int, String) {
        let policy = OriginPolicy(allowedOrigins: extra, secure: false)
        let response = Admission.answer(
            HTTPRequest(path: Admission.path, query: query, origin: origin, host: host), policy: policy)
        #expect(response.headers.contains(HTTPHeader("Access-Control-Allow-Origin", "*")))
        #expect(response.headers.contains(HTTPHeader("Cache-Control", "no-store")))
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    @Test("an allowed origin, or no origin at all, is told it is allowed")
    func allowed() {
        let ok = (200, "{\"allowed\":true}\n")
        #expect(answer("https://maps.example.org", allowing: ["https://MAPS.example.org"]) == ok)
        #expect(answer(nil) == ok)
        #expect(answer("http://127.0.0.1:8080") == ok)
        #expect(answer("http://127.0.0.1:8080", allowing: ["https://maps.example.org"]) == ok)
        #expect(answer("https://anything.example", allowing: ["*"]) == ok)
    }

    @Test("a refused origin gets 403 and the reason, naming what the server accepts")
    func refused() {
        #expect(
            answer("https://x.example", allowing: ["https://maps.example.org"])
                == (
                    403,
                    #"{"allowed":false,"reason":"origin https://x.example is not allowed: this server accepts http://127.0.0.1:8080 and https://maps.example.org"}"#
                        + "\n"
                ))
        #expect(answer("", allowing: ["https://maps.example.org"]).0 == 403)
        // The server's own origin is judged by the Host the page asked for.
        #expect(answer("http://127.0.0.1:8080", host: "127.0.0.1:9090").0 == 403)
    }

    @Test("without an Origin header (a page's GET to its own origin) the origin parameter is judged")
    func originParameter() {
        let list = ["https://maps.example.org"]
        #expect(answer(nil, allowing: list, query: "origin=https%3A%2F%2Fx.example").0 == 403)
        #expect(answer(nil, allowing: list, query: "x=1&origin=https%3A%2F%2Fmaps.example.org").0 == 200)
        #expect(answer(nil, allowing: list, query: "origin=http%3A%2F%2F127.0.0.1%3A8080").0 == 200)
        // A browser's Origin header wins over the parameter.
        #expect(answer("https://x.example", allowing: list, query: "origin=https%3A%2F%2Fmaps.example.org").0 == 403)
    }

    @Test("files are served across origins only from the mount that says so, by longest prefix")
    func crossOriginMounts() {
        let mounts = [
            StaticMount(urlPath: "/", directory: "web"),
            StaticMount(urlPath: "/pinwheel", directory: "web/pinwheel", crossOrigin: true),
        ]
        #expect(WebSocketServer.mount(servingPath: "/pinwheel/client.js", among: mounts)?.crossOrigin == true)
        #expect(WebSocketServer.mount(servingPath: "/pinwheel", among: mounts)?.crossOrigin == true)
        #expect(WebSocketServer.mount(servingPath: "/pinwheels.js", among: mounts)?.crossOrigin == false)
        #expect(WebSocketServer.mount(servingPath: "/demo.js", among: mounts)?.crossOrigin == false)
    }
}
