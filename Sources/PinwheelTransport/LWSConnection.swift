import CLibWebSockets
import CMessageDeflate
import CPermessageDeflate
import PinwheelCore

/// Service-thread state of one WebSocket connection, server or client side. Lws service thread only.
final class LWSConnection {
    let id: ConnectionID
    var wsi: OpaquePointer?
    var assembler: MessageAssembler
    /// Set when RECEIVE decided to close; the close itself happens in the next WRITEABLE.
    var closingFromReceive = false
    // Set once WRITEABLE returned -1. lws may call WRITEABLE again while it sends the close frame;
    // a second -1 makes it shut the socket at once and the peer can lose the frame.
    private var closeIssued = false
    /// The close we started, reported to the delegate when the connection is gone.
    var localClose: (code: CloseCode, reason: String)?
    /// True once a deadline for a requested close is set.
    var closeDeadlineArmed = false
    // The last message handed to lws_write, kept until the next WRITEABLE, so the buffer lws wrote
    // the frame header into outlives the call whatever lws does with it.
    private var inFlight: [UInt8] = []
    /// True when permessage-deflate is active on this connection: a message queued `.whenWritten` is
    /// compressed as it is written, and every message's frame gets RSV1 exactly when it is compressed.
    var compresses = false
    /// Binary frames are delivered (a client's connections) instead of closing with 1003 (a server's).
    var acceptsBinary = false
    /// Set where permessage-deflate may be on: a message whose first frame has RSV1 set is inflated
    /// whole here (the extension passes frames through as they came).
    var inflatesMessages = false
    /// The keepalive sweep during which the peer last sent anything, a pong included.
    private(set) var heardAtSweep: UInt32 = 0
    /// True once a ping was asked for since the peer was last heard from.
    private(set) var pinged = false
    // Set by `schedulePing`: the next WRITEABLE sends a ping before anything else.
    private var pingDue = false
    /// The server's frame budget and idle account (``FramePolicy``).
    var frames = FrameBudget(atSweep: 0, wire: -1, countsMessages: true)

    /// The close frame the peer sent first, if it did.
    var peerClose: (code: CloseCode, reason: String)?
    /// Set once lws started closing (our close, the peer's, or lws's own on a protocol error): no
    /// data frame may follow a Close (RFC 6455 §5.5.1).
    private var closing = false

    /// How long a close we start may take before lws drops the connection.
    let closeGrace: Duration

    init(id: ConnectionID, wsi: OpaquePointer?, maxMessageBytes: Int, closeGrace: Duration) {
        self.id = id
        self.wsi = wsi
        self.assembler = MessageAssembler(limit: maxMessageBytes)
        self.closeGrace = closeGrace
    }

    /// How the connection ended, for the delegate: our close, the peer's, or 1006 for a drop.
    var closeOutcome: (code: CloseCode, reason: String) {
        localClose ?? peerClose ?? (.abnormal, "connection dropped")
    }

    /// Notes that the peer spoke during keepalive sweep `sweep`. Lws service thread only.
    func heard(atSweep sweep: UInt32) {
        heardAtSweep = sweep
        pinged = false
    }

    /// Has the next WRITEABLE send a ping; the peer's pong counts as hearing from it.
    /// Lws service thread only.
    func schedulePing(_ wsi: OpaquePointer) {
        pinged = true
        pingDue = true
        lws_callback_on_writable(wsi)
    }

    /// Drops the connection without a close handshake (a peer that answers nothing would not complete
    /// one), reported as 1006 with `reason`. Lws service thread only.
    func drop(_ wsi: OpaquePointer, reason: String) {
        localClose = (.abnormal, reason)
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC)
    }

    /// Handles one RECEIVE chunk; calls `deliver` with each complete message and whether it came in
    /// binary frames.
    /// - Returns: the value the lws callback returns (-1 closes).
    /// Lws service thread only.
    func receive(
        _ wsi: OpaquePointer, chunk: UnsafeRawBufferPointer, counters: TransportCounters,
        deliver: (_ message: [UInt8], _ binary: Bool) -> Void
    ) -> Int32 {
        // Closing: drop whatever still arrives until WRITEABLE closes.
        if closingFromReceive { return 0 }
        // lws keeps the first frame's kind for its continuation frames.
        let binary = lws_frame_is_binary(wsi) != 0
        if binary && !acceptsBinary {
            return closeFromReceive(
                wsi, code: .unsupportedData, reason: "binary frames are not accepted", grace: closeGrace)
        }
        let isLast = lws_is_final_fragment(wsi) != 0 && lws_remaining_packet_payload(wsi) == 0
        // RSV1 on a message's first frame marks it compressed (RFC 7692 §6); lws keeps that frame's bits
        // while it hands over the frame.
        let compressed = inflatesMessages && lws_is_first_fragment(wsi) != 0 && lws_get_reserved_bits(wsi) & 0x40 != 0
        switch assembler.append(chunk, isLast: isLast, binary: binary, startsCompressed: compressed) {
        case .incomplete:
            return 0
        case .tooLarge:
            return closeFromReceive(
                wsi, code: .messageTooBig, reason: "message exceeds \(assembler.limit) bytes", grace: closeGrace)
        case .invalidUTF8:
            return closeFromReceive(wsi, code: .invalidPayload, reason: "invalid utf8", grace: closeGrace)
        case .invalidCompression:
            return closeFromReceive(
                wsi, code: .invalidPayload, reason: "invalid permessage-deflate data", grace: closeGrace)
        case .outOfMemory:
            return closeFromReceive(
                wsi, code: .internalError, reason: "out of memory inflating a message", grace: closeGrace)
        case .complete(let message):
            counters.messagesReceived.add(1, ordering: .relaxed)
            counters.bytesReceived.add(message.count, ordering: .relaxed)
            deliver(message, binary)
            return 0
        }
    }

    /// Writes up to `limit` queued messages, stopping early when lws buffers or the socket is full,
    /// and carries out a requested close once the queue before it is written.
    /// - Returns: the value the lws callback returns (-1 closes).
    /// Lws service thread only.
    func writeQueued(
        _ wsi: OpaquePointer, outboxes: Outboxes, limit: Int, counters: TransportCounters
    ) -> Int32 {
        if closeIssued { return 0 }
        if closingFromReceive {
            closeIssued = true
            return -1
        }
        if closing || peerClose != nil { return 0 }
        inFlight = []
        if pingDue { return writePing(wsi) }
        for _ in 0..<limit {
            var (item, more) = outboxes.next(for: id)
            switch item {
            case nil:
                return 0
            case .close(let code, let reason):
                localClose = (code, reason)
                Self.setCloseReason(wsi, code: code, reason: reason)
                closeIssued = true
                return -1
            case .message(var message):
                // Let go of, so the buffer has one owner and lws writes the frame header into it
                // in place rather than into a copy of the whole message.
                item = nil
                if message.deflate == .whenWritten { message = Self.compressedForWriting(message, on: compresses) }
                // The extension's callback sets RSV1 on this message's frame, or leaves it clear.
                if compresses { permessage_deflate_set_compressed(message.deflate == .compressed ? 1 : 0) }
                let (payloadCount, kind) = (message.payloadCount, message.binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT)
                let written = message.buffer.withUnsafeMutableBufferPointer { storage in
                    lws_write(wsi, storage.baseAddress! + Int(SHIM_LWS_PRE), payloadCount, kind)
                }
                if compresses { permessage_deflate_set_compressed(0) }
                inFlight = message.buffer
                if written < 0 { return -1 }
                counters.messagesSent.add(1, ordering: .relaxed)
                counters.bytesSent.add(message.sourceCount, ordering: .relaxed)
                if !more { return 0 }
            }
            if lws_partial_buffered(wsi) != 0 || lws_send_pipe_choked(wsi) != 0 { break }
        }
        lws_callback_on_writable(wsi)
        return 0
    }

    /// Whether permessage-deflate was negotiated on `wsi`. lws 4.1.6 has no call that says so, but
    /// setting an extension's option answers -1 exactly when the extension is not active (the
    /// extension's callback takes any option and does nothing with it). Lws service thread only.
    static func deflateIsActive(_ wsi: OpaquePointer) -> Bool {
        lws_set_extension_option(wsi, "permessage-deflate", "active", "1") >= 0
    }

    /// A message queued `.whenWritten`, compressed when the connection negotiated deflate
    /// (`compresses`), else as it is. Lws service thread only.
    static func compressedForWriting(_ message: Outboxes.Message, on compresses: Bool) -> Outboxes.Message {
        var message = message
        message.deflate = .none
        guard compresses else { return message }
        let headroom = Int(SHIM_LWS_PRE)
        let compressed = message.buffer.withUnsafeBytes { bytes in
            MessageDeflate.compress(
                UnsafeRawBufferPointer(rebasing: bytes[headroom...]), windowBits: MESSAGE_DEFLATE_WINDOW_BITS)
        }
        if let compressed {
            message.buffer = compressed
            message.deflate = .compressed
        }
        return message
    }

    /// Writes a ping on its own: lws sends control frames around permessage-deflate, and nothing of
    /// a compressed message is draining when lws calls WRITEABLE. It carries a payload because lws
    /// 4.1.6 does not report an empty pong (RECEIVE_PONG).
    /// - Returns: the value the lws callback returns (-1 closes).
    private func writePing(_ wsi: OpaquePointer) -> Int32 {
        pingDue = false
        var frame = [UInt8](repeating: 0, count: Int(SHIM_LWS_PRE)) + Array("pinwheel".utf8)
        let written = frame.withUnsafeMutableBufferPointer { storage in
            lws_write(wsi, storage.baseAddress! + Int(SHIM_LWS_PRE), 8, LWS_WRITE_PING)
        }
        inFlight = frame
        if written < 0 { return -1 }
        // Whatever is queued goes out in the next WRITEABLE.
        lws_callback_on_writable(wsi)
        return 0
    }

    /// Asks lws for a WRITEABLE; if a close is waiting, also gives the peer `closeGrace` to take it before
    /// lws drops the connection. A peer that stopped reading holds lws's partial buffer, so WRITEABLE
    /// (and our close frame) would otherwise wait for the keepalive hangup. Lws service thread only.
    func wake(_ wsi: OpaquePointer, close: (code: CloseCode, reason: String)?) {
        if let close, !closeDeadlineArmed {
            closeDeadlineArmed = true
            // Reported if the deadline, not the close handshake, ends the connection.
            localClose = close
            // lws 4.1.6 exports only the whole-second form (lws_set_timeout_us is declared, not built).
            lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, Int32(max(1, closeGrace.components.seconds)))
        }
        lws_callback_on_writable(wsi)
    }

    /// Starts a close from inside RECEIVE: the frame will carry `code` and `reason`, and the next
    /// WRITEABLE returns -1 to send it. Returning -1 from RECEIVE itself is unreliable in lws 4.1.6:
    /// it is ignored while permessage-deflate drains (the rest arrives as a new message), and when
    /// the peer's next frame sits in the same read, lws kills the socket without a close frame
    /// (about 1 run in 20 here). If WRITEABLE never comes, `grace` drops the connection.
    /// - Returns: 0, the value for the RECEIVE callback. Lws service thread only.
    func closeFromReceive(_ wsi: OpaquePointer, code: CloseCode, reason: String, grace: Duration) -> Int32 {
        closingFromReceive = true
        localClose = (code, reason)
        Self.setCloseReason(wsi, code: code, reason: reason)
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, Int32(max(1, grace.components.seconds)))
        lws_callback_on_writable(wsi)
        return 0
    }

    /// Records the peer's close frame (`WS_PEER_INITIATED_CLOSE`): 2 bytes of code, then the reason.
    /// lws echoes the payload after this callback, having already turned codes RFC 6455 §7.4 forbids
    /// below 5000 into 1002; codes of 5000 and above are rewritten here, in place, the same way.
    /// - Returns: the callback's value: -1 fails a connection whose close payload is a single byte
    ///   (no valid close has one) or whose reason is not UTF-8 (RFC 6455 §8.1; the server leaves lws's
    ///   UTF-8 check off), which lws would otherwise echo.
    /// Lws service thread only.
    func notePeerClose(_ payload: UnsafeMutableRawBufferPointer) -> Int32 {
        guard payload.count >= 2 else {
            peerClose = (.noStatus, "")
            return payload.isEmpty ? 0 : -1
        }
        guard UnsafeRawBufferPointer(rebasing: payload[2...]).withMemoryRebound(to: UInt8.self, UTF8Text.isValid) else {
            peerClose = (.noStatus, "")
            return -1
        }
        let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
        peerClose = (CloseCode(rawValue: code), String(decoding: payload[2...], as: UTF8.self))
        if code >= 5000 {
            payload[0] = UInt8(CloseCode.protocolError.rawValue >> 8)
            payload[1] = UInt8(CloseCode.protocolError.rawValue & 0xFF)
        }
        return 0
    }

    /// lws started closing the connection (WS_SERVER_DROP_PROTOCOL, just before it sends its Close):
    /// writes stop, and a timer drops the connection if the peer has not completed the handshake
    /// within `grace`. lws's own waits are 5 s for each half of the handshake.
    /// Lws service thread only.
    func closeStarted(_ wsi: OpaquePointer, grace: Duration) {
        closing = true
        let micros = grace.components.seconds * 1_000_000 + grace.components.attoseconds / 1_000_000_000_000
        lws_set_timer_usecs(wsi, lws_usec_t(micros))
    }

    /// Sets the code and reason of the close frame lws sends when the callback returns -1; the
    /// reason is cut to the 123 bytes a close frame allows, on a character boundary. Lws service thread only.
    static func setCloseReason(_ wsi: OpaquePointer, code: CloseCode, reason: String) {
        var text = Substring(reason)
        while text.utf8.count > 123 {
            text = text.dropLast()
        }
        var bytes = Array(text.utf8)
        bytes.withUnsafeMutableBufferPointer { buffer in
            lws_close_reason(wsi, lws_close_status(UInt32(code.rawValue)), buffer.baseAddress, buffer.count)
        }
    }

    /// The value of one request header, nil when absent. Lws service thread only.
    static func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        let length = Int(lws_hdr_total_length(wsi, token))
        guard length > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        let copied = Int(lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token))
        guard copied >= 0 else { return nil }
        return String(decoding: buffer[0..<copied].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A header lws has no token for, by its name in lower case with the colon (lws keeps such names
    /// as they were sent, so the canonical capitalisation is asked too); nil when absent.
    static func customHeader(_ wsi: OpaquePointer, _ name: String) -> String? {
        let canonical = name.split(separator: "-").map { $0.prefix(1).uppercased() + $0.dropFirst() }
            .joined(separator: "-")
        for candidate in [name, canonical] {
            let length = Int(lws_hdr_custom_length(wsi, candidate, Int32(candidate.utf8.count)))
            guard length >= 0 else { continue }
            var buffer = [CChar](repeating: 0, count: length + 1)
            let copied = Int(
                lws_hdr_custom_copy(wsi, &buffer, Int32(buffer.count), candidate, Int32(candidate.utf8.count)))
            guard copied >= 0 else { return nil }
            return String(decoding: buffer[0..<copied].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return nil
    }

    /// The id stored in a wsi's opaque user data by `attach`, nil when none. Lws service thread only.
    static func id(of wsi: OpaquePointer) -> ConnectionID? {
        guard let raw = lws_get_opaque_user_data(wsi) else { return nil }
        return ConnectionID(rawValue: UInt64(UInt(bitPattern: raw)))
    }

    /// Stores `id` in the wsi's opaque user data, so callbacks find the connection without a lookup by address.
    /// Lws service thread only.
    static func attach(_ id: ConnectionID, to wsi: OpaquePointer) {
        lws_set_opaque_user_data(wsi, UnsafeMutableRawPointer(bitPattern: UInt(id.rawValue)))
    }
}
