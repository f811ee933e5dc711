import Foundation
import PinwheelTestSupport
import Testing

/// What the Python `websockets` probe saw; an independent client to check the server against.
struct ProbeResult: Decodable {
    var opened: Bool
    var subprotocol: String?
    var received: [String]
    var closeCode: Int?
    var closeReason: String?
    var error: String?
    /// How the connection ended, as websockets describes it (for diagnosis).
    var closedBy: String?
    /// The first frame of each message received with permessage-deflate on, as it came off the wire.
    var frames: [ProbeFrame]
}

struct ProbeFrame: Decodable, Equatable {
    var binary: Bool
    /// RSV1: the message was compressed.
    var compressed: Bool
}

/// One thing the probe sends, in order.
enum ProbeSend {
    case text(String)
    /// A text frame of `count` copies of `character`.
    case repeated(Character, count: Int)
    /// One text message split into these frames.
    case fragments([String])
    case binary([UInt8])
    /// A text frame whose payload is these raw bytes (may be invalid UTF-8).
    case rawText([UInt8])

    var json: [String: Any] {
        switch self {
        case .text(let text): return ["text": text]
        case .repeated(let character, let count): return ["repeat": String(character), "count": count]
        case .fragments(let parts): return ["fragments": parts]
        case .binary(let bytes): return ["binary_hex": bytes.map { String(format: "%02x", $0) }.joined()]
        case .rawText(let bytes): return ["raw_text_hex": bytes.map { String(format: "%02x", $0) }.joined()]
        }
    }
}

/// Connects with Python `websockets`, sends `sends`, reads `receive` messages (or until closed; a
/// binary one as `binary:` and its hex), and reports what happened. With `waitForClose` it keeps reading until the server closes. With
/// `inflateWindowBits` the probe inflates with a window of that size instead of the negotiated one,
/// so a message compressed with a larger window fails to decode. With `serverWindowBits` its deflate
/// offer limits the server's window to that size (`server_max_window_bits`).
func probe(
    url: String, subprotocols: [String]? = ["pinwheel.v1"], origin: String? = nil, deflate: Bool = true,
    inflateWindowBits: Int? = nil, serverWindowBits: Int? = nil, sends: [ProbeSend] = [], receive: Int = 0,
    waitForClose: Bool = false,
    timeout: Double = 10
) throws -> ProbeResult {
    let arguments: [String: Any] = [
        "url": url, "subprotocols": subprotocols as Any? ?? NSNull(), "origin": origin as Any? ?? NSNull(),
        "compression": deflate ? "deflate" : NSNull(), "send": sends.map(\.json), "receive": receive,
        "wait_for_close": waitForClose, "timeout": timeout,
        "inflate_window_bits": inflateWindowBits as Any? ?? NSNull(),
        "server_window_bits": serverWindowBits as Any? ?? NSNull(),
    ]
    let json = String(decoding: try JSONSerialization.data(withJSONObject: arguments), as: UTF8.self)
    let run = try runPython(probeScript, arguments: [json])
    let decoder = JSONDecoder()
    decoder.keyDecodingStrategy = .convertFromSnakeCase
    do {
        return try decoder.decode(ProbeResult.self, from: Data(run.output.utf8))
    } catch {
        Issue.record("probe printed \(run.output.debugDescription), status \(run.status)")
        throw error
    }
}

private let probeScript = #"""
    import json, ssl, sys, zlib
    from websockets.sync.client import connect
    from websockets.exceptions import ConnectionClosed
    from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory

    args = json.loads(sys.argv[1])
    out = {"opened": False, "subprotocol": None, "received": [], "frames": [],
           "close_code": None, "close_reason": None, "error": None}

    def record_frames(ws):
        for extension in ws.protocol.extensions:
            def recording(frame, *rest, _decode=extension.decode, **options):
                if frame.opcode.name in ("TEXT", "BINARY"):
                    out["frames"].append({"binary": frame.opcode.name == "BINARY", "compressed": frame.rsv1})
                return _decode(frame, *rest, **options)
            extension.decode = recording

    def as_text(message):
        return message if isinstance(message, str) else "binary:" + message.hex()

    def narrow_inflater(ws, bits):
        for extension in ws.protocol.extensions:
            extension.remote_max_window_bits = bits
            extension.decoder = zlib.decompressobj(wbits=-bits)

    def exchange(ws):
        if args["inflate_window_bits"]:
            narrow_inflater(ws, args["inflate_window_bits"])
        record_frames(ws)
        out["opened"] = True
        out["subprotocol"] = ws.subprotocol
        try:
            for item in args["send"]:
                if "text" in item: ws.send(item["text"])
                elif "repeat" in item: ws.send(item["repeat"] * item["count"])
                elif "fragments" in item: ws.send(iter(item["fragments"]))
                elif "binary_hex" in item: ws.send(bytes.fromhex(item["binary_hex"]))
                elif "raw_text_hex" in item: ws.send(bytes.fromhex(item["raw_text_hex"]), text=True)
            for _ in range(args["receive"]):
                out["received"].append(as_text(ws.recv(timeout=args["timeout"])))
            if args["wait_for_close"]:
                while True:
                    out["received"].append(as_text(ws.recv(timeout=args["timeout"])))
        except ConnectionClosed as e:
            out["closed_by"] = repr(e)
        received = ws.protocol.close_rcvd
        if received is not None:
            out["close_code"] = received.code
            out["close_reason"] = received.reason

    tls = None
    if args["url"].startswith("wss://"):
        # Tests use a throwaway self-signed certificate.
        tls = ssl.create_default_context()
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE
    class WindowLimitingFactory(ClientPerMessageDeflateFactory):
        # lws 4.1.6 compresses within the server_max_window_bits a client offers but leaves the
        # parameter out of its answer, which websockets would refuse.
        def process_response_params(self, params, accepted):
            if all(name != "server_max_window_bits" for name, _ in params):
                params = list(params) + [("server_max_window_bits", str(self.server_max_window_bits))]
            return super().process_response_params(params, accepted)

    compression, extensions = args["compression"], None
    if args["server_window_bits"]:
        compression = None
        extensions = [WindowLimitingFactory(server_max_window_bits=args["server_window_bits"])]
    try:
        with connect(args["url"], ssl=tls, subprotocols=args["subprotocols"], origin=args["origin"],
                     compression=compression, extensions=extensions, proxy=None, max_size=None,
                     open_timeout=args["timeout"], close_timeout=args["timeout"], ping_interval=None) as ws:
            exchange(ws)
    except Exception as e:
        out["error"] = type(e).__name__ + ": " + str(e)
    print(json.dumps(out))
    """#
