import CLibWebSockets
import CMessageDeflate
import PinwheelCore

/// Joins the chunks lws hands over into whole messages, refusing any that grow past a limit, and text
/// messages that are not UTF-8.
///
/// lws delivers at most `rx_buffer_size` bytes per callback, as they came over the wire: a compressed
/// message (RSV1 on its first frame) is joined compressed and inflated whole here, and the limit counts
/// its inflated bytes too, so a 2 MiB message compressed to a few KB is refused. Lws service thread
/// only.
struct MessageAssembler {
    enum Outcome {
        /// More chunks follow.
        case incomplete
        /// A whole message.
        case complete([UInt8])
        /// The message passed the limit; the caller closes with 1009.
        case tooLarge(receivedBytes: Int)
        /// The whole text message is not UTF-8; the caller closes with 1007.
        case invalidUTF8
        /// The message was marked compressed but does not inflate; the caller closes with 1007.
        case invalidCompression
        /// No memory to inflate the message into; the caller closes with 1011.
        case outOfMemory
    }

    /// Most bytes one message may have.
    let limit: Int
    // The message so far; empty between messages so idle connections hold no buffer.
    private var buffer: [UInt8] = []
    // Whether a message is being joined (its first chunk came), and whether it came compressed.
    private var inMessage = false
    private var compressed = false

    init(limit: Int) {
        self.limit = limit
    }

    /// Adds one chunk. `isLast` is lws's "final fragment and nothing remaining in this frame";
    /// `binary` says the message came in binary frames, which need not be UTF-8; `startsCompressed`,
    /// read on a message's first chunk only, that it came compressed (RSV1) and is to be inflated.
    mutating func append(
        _ chunk: UnsafeRawBufferPointer, isLast: Bool, binary: Bool = false, startsCompressed: Bool = false
    ) -> Outcome {
        if !inMessage {
            inMessage = true
            compressed = startsCompressed
        }
        let total = buffer.count + chunk.count
        guard total <= limit else {
            buffer = []
            inMessage = false
            return .tooLarge(receivedBytes: total)
        }
        buffer.append(contentsOf: chunk)
        guard isLast else { return .incomplete }
        defer {
            buffer = []
            inMessage = false
        }
        var message = buffer
        if compressed {
            switch Self.inflate(buffer, limit: limit) {
            case .success(let inflated): message = inflated
            case .failure(.tooLarge): return .tooLarge(receivedBytes: limit + 1)
            case .failure(.corrupt): return .invalidCompression
            case .failure(.noMemory): return .outOfMemory
            }
        }
        // The only UTF-8 check: lws's (LWS_SERVER_OPTION_VALIDATE_UTF8) would read compressed frames.
        guard binary || message.withUnsafeBufferPointer(UTF8Text.isValid) else { return .invalidUTF8 }
        return .complete(message)
    }

    enum InflateFailure: Error {
        case corrupt
        case tooLarge
        case noMemory
    }

    /// One whole permessage-deflate message inflated with ISA-L or zlib (CMessageDeflate), at most `limit` bytes.
    static func inflate(_ compressed: [UInt8], limit: Int) -> Result<[UInt8], InflateFailure> {
        var inflated: UnsafePointer<UInt8>?
        let length = compressed.withUnsafeBufferPointer {
            message_deflate_inflate($0.baseAddress, $0.count, limit, &inflated)
        }
        guard length >= 0, let inflated else {
            switch Int32(truncatingIfNeeded: length) {
            case MESSAGE_INFLATE_TOO_LARGE.rawValue: return .failure(.tooLarge)
            case MESSAGE_INFLATE_NO_MEMORY.rawValue: return .failure(.noMemory)
            default: return .failure(.corrupt)
            }
        }
        return .success(Array(UnsafeBufferPointer(start: inflated, count: length)))
    }
}
