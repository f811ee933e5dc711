import CLibWebSockets

/// Builds the C structures a context points at, in `CStorage` so they outlive the context.
/// Whatever thread creates the context, before the service thread exists.
enum LWSContextParts {
    /// Context options for the chosen event loop.
    static func eventLoopOptions(_ backend: EventLoopBackend) -> UInt64 {
        switch backend {
        case .poll: return 0
        case .libev: return UInt64(LWS_SERVER_OPTION_LIBEV)
        }
    }

    /// The extension list: permessage-deflate, or none.
    static func extensions(deflate: Bool) -> UnsafePointer<lws_extension>? {
        deflate ? shim_deflate_extensions() : nil
    }

    /// lws's idle policy: ping after a silence, hang up after a longer one.
    static func retryPolicy(_ keepalive: Keepalive, in storage: CStorage) -> UnsafePointer<lws_retry_bo_t> {
        var policy = lws_retry_bo_t()
        policy.secs_since_valid_ping = UInt16(keepalive.pingAfter.components.seconds)
        policy.secs_since_valid_hangup = UInt16(keepalive.hangUpAfter.components.seconds)
        return UnsafePointer(storage.value(policy))
    }

    /// A protocol entry without its callback: the caller assigns a top-level function directly,
    /// the only form Swift turns into a C function pointer.
    static func protocolEntry(name: String, txPacketSize: Int, in storage: CStorage) -> lws_protocols {
        var entry = lws_protocols()
        entry.name = storage.string(name)
        entry.per_session_data_size = 0
        // 0 keeps lws's 4 KiB default: the rx buffer is allocated per connection.
        entry.rx_buffer_size = 0
        entry.tx_packet_size = txPacketSize
        return entry
    }
}
