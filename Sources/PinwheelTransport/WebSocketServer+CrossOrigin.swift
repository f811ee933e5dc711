import CLibWebSockets

extension WebSocketServer {
    /// LWS_CALLBACK_ADD_HEADERS of a static file: when the file's mount is `crossOrigin`, says
    /// `Vary: Origin` and, for an `Origin` the policy allows, `Access-Control-Allow-Origin` naming
    /// it. Lws service thread only.
    /// - Returns: 0, or -1 when the headers do not fit lws's buffer.
    func addCrossOriginHeaders(_ wsi: OpaquePointer, _ args: UnsafeMutablePointer<lws_process_html_args>?) -> Int32 {
        guard let args, let start = args.pointee.p,
            let path = LWSConnection.header(wsi, WSI_TOKEN_GET_URI) ?? LWSConnection.header(wsi, WSI_TOKEN_HEAD_URI),
            Self.mount(servingPath: path, among: configuration.staticMounts)?.crossOrigin == true
        else { return 0 }
        var headers: [(String, String)] = [("vary:", "Origin")]
        if let origin = LWSConnection.header(wsi, WSI_TOKEN_ORIGIN),
            configuration.allowedOrigins.refusal(
                origin: origin, host: LWSConnection.header(wsi, WSI_TOKEN_HOST), secure: configuration.tls != nil)
                == nil
        {
            headers.append(("access-control-allow-origin:", origin))
        }
        // lws 4.1.6 sets `max_len` (the room left in its buffer) and `p` for this callback.
        var cursor: UnsafeMutablePointer<UInt8>? = UnsafeMutableRawPointer(start).assumingMemoryBound(to: UInt8.self)
        let end = cursor! + Int(args.pointee.max_len)
        for (name, value) in headers {
            let bytes = Array(value.utf8)
            guard lws_add_http_header_by_name(wsi, name, bytes, Int32(bytes.count), &cursor, end) == 0 else {
                return -1
            }
        }
        args.pointee.p = start + (UnsafeMutableRawPointer(cursor!) - UnsafeMutableRawPointer(start))
        return 0
    }

    /// The mount lws serves `path` from: the longest `urlPath` that is `path` or a folder above it.
    static func mount(servingPath path: String, among mounts: [StaticMount]) -> StaticMount? {
        mounts.filter { mount in
            let prefix = mount.urlPath
            guard path.hasPrefix(prefix) else { return false }
            return prefix.hasSuffix("/") || path.count == prefix.count
                || path[path.index(path.startIndex, offsetBy: prefix.count)] == "/"
        }.max { $0.urlPath.count < $1.urlPath.count }
    }
}
