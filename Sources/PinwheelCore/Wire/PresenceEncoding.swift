/// Writes `presence` messages. Each viewer's message leaves out its own viewport, so the server
/// encodes every entry once and joins the entries each viewer is shown.
public enum PresenceEncoding {
    /// Writes one entry of `viewports`, replacing what `writer` held.
    public static func entry(_ viewport: PresenceViewport, into writer: inout JSONWriter) {
        writer.reset()
        writer.raw(#"{"session":"#)
        writer.string(viewport.session)
        writer.raw(#","bbox":"#)
        writer.bbox(viewport.bbox)
        writer.raw(#","zoom":"#)
        writer.number(viewport.zoom)
        writer.byte(UInt8(ascii: "}"))
    }

    /// The `presence` message showing `entries`, each written by ``entry(_:into:)``, in order.
    public static func message(_ entries: some Sequence<[UInt8]>) -> [UInt8] {
        var message = Array(#"{"type":"presence","viewports":["#.utf8)
        for (k, entry) in entries.enumerated() {
            if k > 0 { message.append(UInt8(ascii: ",")) }
            message.append(contentsOf: entry)
        }
        message.append(contentsOf: "]}".utf8)
        return message
    }
}
