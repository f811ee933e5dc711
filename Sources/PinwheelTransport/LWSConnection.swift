import CLibWebSockets
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
    // The last message handed to lws_write, kept until the next WRITEABLE: with permessage-deflate,
    // zlib keeps reading the caller's buffer while lws drains a large message over several
    // POLLOUTs (the lws client does so before calling WRITEABLE again). Freeing it at once
    // corrupted the tail of a 1 MiB message.
    private var inFlight: [UInt8] = []
    /// A message going out in fragments (permessage-deflate only): its buffer, payload size, the
    /// payload bytes already written and whether it is binary.
    private var fragmenting: (buffer: [UInt8], payloadCount: Int, written: Int, binary: Bool)?
    /// True when permessage-deflate may be active on this connection (negotiated, or offered and
    /// not known to be refused); `writeQueued` then ends a callback after any message lws compresses
    /// that is over `deflateSafePayload` bytes.
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

    /// Largest payload whose deflate output always fits lws's 1 KiB deflate tx buffer: incompressible
    /// text costs a stored-block header and the sync-flush marker on top, well under 64 bytes.
    static let deflateSafePayload = 960
    /// Largest fragment handed to lws_write with permessage-deflate. zlib stops taking input at a
    /// block boundary when lws's 1 KiB output buffer is full, and lws 4.1.6 then aborts on its next
    /// write (extension-permessage-deflate.c:415, assert !tx.avail_in) — reproduced at once with 1,000
    /// clients at 10 viewports/s. A block holds up to `2^(memLevel + 6) - 1` symbols (8,191 at the
    /// memLevel CDeflateGuard gives lws's compressor), so a fragment shorter than that is always taken
    /// whole in one call.
    static let deflateFragment = (1 << (Int(DEFLATE_GUARD_MEM_LEVEL) + 6)) - 1024
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

    /// On CLOSED: when the permessage-deflate guard (Sources/CDeflateGuard) failed this connection
    /// rather than let lws abort, counts it and says so as the close reason. Lws service thread only.
    func collectDeflateGuardTrip(_ wsi: OpaquePointer, counters: TransportCounters) {
        guard deflate_guard_take_trip(wsi) != 0 else { return }
        counters.deflateGuardTrips.add(1, ordering: .relaxed)
        localClose = (.abnormal, "permessage-deflate stream that lws 4.1.6 cannot process")
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

    /// Writes up to `limit` queued messages, stopping early when lws buffers, the socket is full or
    /// (with `compresses`) after a message deflate may not emit at once, and carries out a requested
    /// close once the queue before it is written.
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
        // The rest of a fragmented message first; nothing else may go between its fragments.
        if fragmenting != nil { return writeFragment(wsi, counters: counters) }
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
            case .message(let message)
            where compresses && message.deflate == .byLWS && message.payloadCount > Self.deflateFragment:
                fragmenting = (message.buffer, message.payloadCount, 0, message.binary)
                return writeFragment(wsi, counters: counters)
            case .message(var message):
                // Let go of, so the buffer has one owner and lws writes the frame header into it
                // in place rather than into a copy of the whole message.
                item = nil
                let lwsCompresses = compresses && message.deflate == .byLWS
                if compresses { deflate_guard_set_send_mode(message.deflate.sendMode) }
                let (payloadCount, kind) = (message.payloadCount, message.binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT)
                let written = message.buffer.withUnsafeMutableBufferPointer { storage in
                    lws_write(wsi, storage.baseAddress! + Int(SHIM_LWS_PRE), payloadCount, kind)
                }
                if compresses { deflate_guard_set_send_mode(DEFLATE_GUARD_LWS_COMPRESSES) }
                inFlight = message.buffer
                if written < 0 { return -1 }
                counters.messagesSent.add(1, ordering: .relaxed)
                counters.bytesSent.add(message.sourceCount, ordering: .relaxed)
                if !more { return 0 }
                // With permessage-deflate, a message that may not fit in one deflate output
                // buffer (1 KiB, lws's default tx_buf_size) ends this callback. Its compressed
                // output then goes out over later POLLOUTs while zlib still holds its input;
                // another lws_write meanwhile aborts lws 4.1.6 (extension-permessage-deflate.c:415,
                // assert !tx.avail_in) or glues the next message on as a continuation. lws 4.1.6
                // happens to report that drain through lws_send_pipe_choked (seen in its ext log),
                // but no document promises it, so we do not rely on it. Payloads up to
                // `deflateSafePayload` compress to less than the buffer even when incompressible,
                // so small messages keep being batched.
                if lwsCompresses && message.payloadCount > Self.deflateSafePayload { break }
            }
            if lws_partial_buffered(wsi) != 0 || lws_send_pipe_choked(wsi) != 0 { break }
        }
        lws_callback_on_writable(wsi)
        return 0
    }

    /// Whether permessage-deflate was negotiated on `wsi`. lws 4.1.6 has no call that says so, but
    /// setting an extension's option answers -1 exactly when the extension is not active. The option
    /// set here is the compression level lws starts with, 1. Lws service thread only.
    static func deflateIsActive(_ wsi: OpaquePointer) -> Bool {
        lws_set_extension_option(wsi, "permessage-deflate", "compression_level", "1") >= 0
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

    /// Writes the next fragment of `fragmenting`: the first as TEXT or BINARY, the rest as CONTINUATION,
    /// all but the last without FIN. Each ends its WRITEABLE, as its deflate output drains over later POLLOUTs.
    /// - Returns: the value the lws callback returns (-1 closes).
    private func writeFragment(_ wsi: OpaquePointer, counters: TransportCounters) -> Int32 {
        guard var message = fragmenting else { return 0 }
        let count = min(Self.deflateFragment, message.payloadCount - message.written)
        let isFirst = message.written == 0
        let isLast = message.written + count == message.payloadCount
        let opcode = message.binary ? LWS_WRITE_BINARY : LWS_WRITE_TEXT
        var flags = (isFirst ? opcode : LWS_WRITE_CONTINUATION).rawValue
        if !isLast { flags |= LWS_WRITE_NO_FIN.rawValue }
        // lws writes the frame header into the LWS_PRE bytes before the fragment: for a later
        // fragment those are payload bytes zlib has already taken whole.
        let start = Int(SHIM_LWS_PRE) + message.written
        let written = message.buffer.withUnsafeMutableBufferPointer { storage in
            lws_write(wsi, storage.baseAddress! + start, count, lws_write_protocol(rawValue: flags))
        }
        if written < 0 { return -1 }
        message.written += count
        if isLast {
            inFlight = message.buffer
            fragmenting = nil
            counters.messagesSent.add(1, ordering: .relaxed)
            counters.bytesSent.add(message.payloadCount, ordering: .relaxed)
        } else {
            fragmenting = message
        }
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
