/// The part of permessage-deflate negotiation that lws 4.1.6 leaves out: a server may answer any offer
/// with `client_no_context_takeover` (RFC 7692 §7.1.1.2), after which every client message is
/// compressed on its own and the server's decompressor — about 7 KiB of zlib state and a 32 KiB
/// window — can be freed after each message instead of living as long as the connection. lws echoes
/// the parameter only when the client offered it, which browsers do not.
enum DeflateNegotiation {
    static let promise = "; client_no_context_takeover"
    static let header = "Sec-WebSocket-Extensions: permessage-deflate"

    /// Makes the upgrade response lws is writing promise `client_no_context_takeover`, in
    /// `LWS_CALLBACK_ADD_HEADERS`, where the `Sec-WebSocket-Extensions` line lws wrote, if any, is
    /// the last one before `end`.
    /// - Parameters:
    ///   - end: just after the CRLF of the response's last line; further headers go here.
    ///   - room: bytes that may be written from `end`.
    /// - Returns: bytes inserted (0 when the client offered the parameter itself), or nil when the
    ///   response does not promise it: no permessage-deflate, several extensions, or no room.
    static func promiseNoContextTakeover(before end: UnsafeMutablePointer<UInt8>, room: Int) -> Int? {
        // The response starts with its status line, so a line break is found before its start; the
        // extension line lws writes is at most 192 bytes long.
        guard end[-2] == UInt8(ascii: "\r"), end[-1] == UInt8(ascii: "\n") else { return nil }
        var start = end - 2
        var scanned = 0
        while start[-1] != UInt8(ascii: "\n") {
            start -= 1
            scanned += 1
            if scanned > 256 { return nil }
        }
        let line = UnsafeBufferPointer(start: start, count: end - 2 - start)
        guard line.starts(with: header.utf8), !line.contains(UInt8(ascii: ",")) else { return nil }
        if line.firstRange(of: promise.dropFirst(2).utf8) != nil { return 0 }
        let added = promise.utf8.count
        guard room >= added else { return nil }
        // The line's CRLF moves to after the parameter.
        var text = Array(promise.utf8)
        text.append(contentsOf: [UInt8(ascii: "\r"), UInt8(ascii: "\n")])
        (end - 2).update(from: text, count: text.count)
        return added
    }
}
