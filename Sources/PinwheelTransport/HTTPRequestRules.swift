import CLibWebSockets

/// The request-level rules of RFC 9110/9112 that lws 4.1.6 does not enforce, checked once the headers
/// are complete. lws reads `Content-Length` with atoll (so "+5", "5,6" and "5x" become 5), reads a
/// body by Content-Length even when `Transfer-Encoding` is also present (the disagreement request
/// smuggling behind a proxy needs), and keeps control bytes in header values (a NUL cuts the value
/// for anything that reads it as a C string). Lws service thread only.
enum HTTPRequestRules {
    /// Why the request must be refused with 400, or nil when it is well-formed.
    /// - Parameter takesBody: whether this request may carry a body at all (a POST, PUT or PATCH to a route).
    static func problem(_ wsi: OpaquePointer, takesBody: Bool) -> String? {
        if let control = controlByteHeader(wsi) { return "header \(control) holds a control byte" }
        let lengths = fragments(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH)
        let chunked = lws_hdr_total_length(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) > 0
        if chunked && !lengths.isEmpty {
            return "Transfer-Encoding and Content-Length together (RFC 9112, section 6.3)"
        }
        if lengths.count > 1 { return "more than one Content-Length" }
        var length = 0
        if let text = lengths.first {
            guard let value = contentLength(text) else { return "Content-Length must be digits only, at most 15" }
            length = value
        }
        if !takesBody && (length > 0 || chunked) { return "this request takes no body" }
        return nil
    }

    /// A Content-Length value: 1 to 15 ASCII digits (up to a petabyte), nothing else.
    static func contentLength(_ bytes: [UInt8]) -> Int? {
        guard (1...15).contains(bytes.count), bytes.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return bytes.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// True for a byte a header value may not hold: the controls other than HTAB, and DEL (RFC 9110 §5.5).
    static func isForbidden(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != 0x09) || byte == 0x7F
    }

    // The request line's parts, which lws keeps as tokens too: not header values (a query may carry
    // percent-encoded bytes of any value once lws decodes it).
    private static let requestLine: Set<UInt32> = [
        WSI_TOKEN_GET_URI, WSI_TOKEN_POST_URI, WSI_TOKEN_OPTIONS_URI, WSI_TOKEN_PUT_URI, WSI_TOKEN_PATCH_URI,
        WSI_TOKEN_DELETE_URI, WSI_TOKEN_CONNECT, WSI_TOKEN_HEAD_URI, WSI_TOKEN_HTTP_URI_ARGS, WSI_TOKEN_HTTP,
    ].map(\.rawValue).reduce(into: []) { $0.insert($1) }

    // The name of the first header lws kept whose value holds a forbidden byte. Headers lws does not
    // keep are never read by anyone.
    private static func controlByteHeader(_ wsi: OpaquePointer) -> String? {
        for raw in 0..<WSI_TOKEN_COUNT.rawValue where !requestLine.contains(raw) {
            let token = lws_token_indexes(raw)
            guard lws_hdr_total_length(wsi, token) > 0 else { continue }
            for value in fragments(wsi, token) where value.contains(where: isForbidden) {
                let name = lws_token_to_string(token).map { String(cString: $0) } ?? "#\(raw)"
                return name.hasSuffix(":") ? String(name.dropLast()) : name
            }
        }
        return nil
    }

    // Each occurrence of a header, as the bytes lws stored (a NUL included).
    private static func fragments(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> [[UInt8]] {
        var found: [[UInt8]] = []
        var index: Int32 = 0
        while true {
            let length = Int(lws_hdr_fragment_length(wsi, token, index))
            guard length > 0 || (index == 0 && lws_hdr_total_length(wsi, token) > 0) else { break }
            var buffer = [CChar](repeating: 0, count: length + 1)
            let copied = Int(lws_hdr_copy_fragment(wsi, &buffer, Int32(buffer.count), token, index))
            guard copied >= 0 else { break }
            found.append(buffer[0..<copied].map { UInt8(bitPattern: $0) })
            index += 1
        }
        return found
    }
}
