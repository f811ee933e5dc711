import Testing

@testable import PinwheelTransport

@Suite("The upgrade response promises client_no_context_takeover")
struct DeflateNegotiationTests {
    /// Runs the rewrite on `response` as lws would have written it, with `room` bytes free after it.
    func rewritten(_ response: String, room: Int = 256) -> (added: Int?, text: String) {
        var buffer = Array(response.utf8) + Array(repeating: UInt8(ascii: "#"), count: room)
        let added = buffer.withUnsafeMutableBufferPointer { storage in
            DeflateNegotiation.promiseNoContextTakeover(
                before: storage.baseAddress! + response.utf8.count, room: room)
        }
        return (added, String(decoding: buffer[..<(response.utf8.count + (added ?? 0))], as: UTF8.self))
    }

    let head = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: WebSocket\r\nSec-WebSocket-Protocol: pinwheel.v1\r\n"

    @Test("a plain permessage-deflate answer gets the parameter before its line break")
    func plainOffer() {
        let (added, text) = rewritten(head + "Sec-WebSocket-Extensions: permessage-deflate\r\n")
        #expect(added == DeflateNegotiation.promise.utf8.count)
        #expect(text == head + "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover\r\n")
    }

    @Test("an answer that already has it is left alone and counts as promised")
    func alreadyPromised() {
        let line = "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover\r\n"
        let (added, text) = rewritten(head + line)
        #expect(added == 0)
        #expect(text == head + line)
    }

    @Test("without permessage-deflate, with several extensions or without room nothing is promised")
    func nothingPromised() {
        #expect(rewritten(head).added == nil)
        #expect(rewritten(head + "Sec-WebSocket-Extensions: permessage-deflate, x-other\r\n").added == nil)
        #expect(rewritten(head + "Sec-WebSocket-Extensions: permessage-deflate\r\n", room: 10).added == nil)
        #expect(rewritten(head + "Sec-WebSocket-Extensions: permessage-deflate").added == nil)
    }
}
