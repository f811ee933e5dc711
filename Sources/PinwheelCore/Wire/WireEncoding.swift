/// How a session's server messages travel, named by the WebSocket subprotocol that selects it.
public enum WireEncoding: String, Sendable, CaseIterable, Codable {
    /// `pinwheel.v1`: every message a JSON text frame. The default and the reference.
    case json = "pinwheel.v1"
    /// `pinwheel.v1+bin`: `batch` and `expansion` as binary frames (``BinaryMessageEncoder``), the
    /// other messages as JSON text frames.
    case binary = "pinwheel.v1+bin"
}
