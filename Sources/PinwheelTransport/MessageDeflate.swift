import CLibWebSockets
import CMessageDeflate

/// How one connection's messages meet permessage-deflate, decided when each is queued.
enum DeflatePolicy: Sendable, Equatable {
    /// No permessage-deflate: messages go out as they are.
    case off
    /// The thread that queues a message compresses it, with a window of 2^`windowBits` bytes, and the
    /// service thread only writes it: a server's connections, whose batches are encoded on worker
    /// threads.
    case beforeQueueing(windowBits: Int32)
    /// The service thread compresses each message as it writes it, when the handshake turned deflate
    /// on: a client's connections, which may queue before the handshake says, and compress every text
    /// message as browsers do, so a server under `pinwheel load` inflates what it would from browsers.
    case whenWritten

    /// Binary messages shorter than this go out uncompressed. Pinwheel's binary batches are varints
    /// and deltas that per-message deflate cannot shrink: over a pan trace, frames under 1 KiB came
    /// out 1–21 % larger and the 1–4 KiB ones 3 % smaller, while deflating them cost a sixth of the
    /// server's CPU (docs/benchmarks/2026-11-26-cpu-per-viewport.md).
    static let uncompressedBinaryLimit = 4096

    /// A server's text messages shorter than this go out uncompressed too: starting the compressor on
    /// a message costs about 4–5 µs (docs/libwebsockets.md), to save a few dozen bytes.
    static let uncompressedTextLimit = 256

    /// A server connection's policy. Messages are compressed with a 4 KiB window
    /// (`MESSAGE_DEFLATE_WINDOW_BITS`), or a smaller one when the client's `offer` limits the server's
    /// (`server_max_window_bits`, which browsers do not send; lws 4.1.6 leaves it out of its answer),
    /// down to the 2^8 bytes RFC 7692 allows.
    static func server(compresses: Bool, offer: String?) -> DeflatePolicy {
        guard compresses else { return .off }
        let limits = (offer ?? "").split(separator: "server_max_window_bits=", omittingEmptySubsequences: false)
            .dropFirst().map { Int32($0.drop { $0 == "\"" }.prefix { $0.isNumber }) ?? 0 }
        let bits = min(MESSAGE_DEFLATE_WINDOW_BITS, limits.min() ?? MESSAGE_DEFLATE_WINDOW_BITS)
        return bits < 8 ? .off : .beforeQueueing(windowBits: bits)
    }

    /// What happens to a message of `payloadCount` bytes.
    func treatment(payloadCount: Int, binary: Bool) -> MessageDeflate {
        switch self {
        case .off:
            return .none
        case _ where binary && payloadCount < Self.uncompressedBinaryLimit:
            return .none
        case .beforeQueueing:
            return !binary && payloadCount < Self.uncompressedTextLimit ? .none : .compressed
        case .whenWritten:
            return .whenWritten
        }
    }
}

/// What is done with one queued message about permessage-deflate.
enum MessageDeflate: Sendable {
    /// Goes out as it is (RSV1 clear), which RFC 7692 allows on any message.
    case none
    /// The payload is already a compressed message (RSV1 set on the wire).
    case compressed
    /// Compressed by the service thread as it is written, when the connection negotiated deflate.
    case whenWritten

    /// `payload` compressed as one permessage-deflate message with a window of 2^`windowBits` bytes,
    /// behind `SHIM_LWS_PRE` bytes of headroom, or nil when compressing failed (the message then goes out
    /// uncompressed). Any thread.
    static func compress(_ payload: UnsafeRawBufferPointer, windowBits: Int32) -> [UInt8]? {
        let headroom = Int(SHIM_LWS_PRE)
        let bound = message_deflate_bound(payload.count)
        var failed = false
        let buffer = [UInt8](unsafeUninitializedCapacity: headroom + bound) { storage, count in
            storage.baseAddress!.initialize(repeating: 0, count: headroom)
            let produced = message_deflate_compress(
                payload.baseAddress?.assumingMemoryBound(to: UInt8.self), payload.count, windowBits,
                storage.baseAddress! + headroom, bound)
            failed = produced < 0
            count = headroom + max(0, produced)
        }
        if failed { return nil }
        // The compressed message is often a third of the bound: a queue should hold only that.
        return buffer.count + 1024 < headroom + bound ? Array(buffer[...]) : buffer
    }
}
