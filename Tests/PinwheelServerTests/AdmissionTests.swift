import Testing

@testable import PinwheelServer
@testable import PinwheelTransport

@Suite("Admission")
struct AdmissionTests {
    func answer(_ origin: String?, _ policy: OriginPolicy, host: String? = "127.0.0.1:8080", query: String = "")
        -> (Int, String)
    {
        let response = Admission.answer(
            HTTPRequest(path: Admission.path, query: query, origin: origin, host: host), policy: policy, secure: false)
        #expect(response.headers.contains(HTTPHeader("Access-Control-Allow-Origin", "*")))
        #expect(response.headers.contains(HTTPHeader("Cache-Control", "no-store")))
        return (response.status, String(decoding: response.body, as: UTF8.self))
    }

    @Test("an allowed origin, or no origin at all, is told it is allowed")
    func allowed() {
        let ok = (200, "{\"allowed\":true}\n")
        #expect(answer("https://maps.example.org", .allowList(["https://MAPS.example.org"])) == ok)
        #expect(answer(nil, .sameOrigin) == ok)
        #expect(answer("http://127.0.0.1:8080", .sameOrigin) == ok)
        #expect(answer("https://anything.example", .any) == ok)
    }

    @Test("a refused origin gets 403 and the reason, naming the option")
    func refused() {
        #expect(
            answer("https://x.example", .allowList(["https://maps.example.org"]))
                == (
                    403,
                    #"{"allowed":false,"reason":"origin https://x.example is not allowed (--allowed-origin)"}"# + "\n"
                ))
        #expect(
            answer("https://x.example", .sameOrigin)
                == (
                    403,
                    #"{"allowed":false,"reason":"origin https://x.example is not allowed (only the server's own origin is; see --allowed-origin)"}"#
                        + "\n"
                ))
        // The server's own origin is judged by the Host the page asked for.
        #expect(answer("http://127.0.0.1:8080", .sameOrigin, host: "127.0.0.1:9090").0 == 403)
    }

    @Test("without an Origin header (a page's GET to its own origin) the origin parameter is judged")
    func originParameter() {
        let list = OriginPolicy.allowList(["https://maps.example.org"])
        #expect(answer(nil, list, query: "origin=http%3A%2F%2F127.0.0.1%3A8080").0 == 403)
        #expect(answer(nil, list, query: "x=1&origin=https%3A%2F%2Fmaps.example.org").0 == 200)
        // A browser's Origin header wins over the parameter.
        #expect(answer("https://x.example", list, query: "origin=https%3A%2F%2Fmaps.example.org").0 == 403)
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
