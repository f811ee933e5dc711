/// Joins the chunks lws hands over into whole messages, refusing any that grow past a limit, and text
/// messages that are not UTF-8.
///
/// lws delivers at most `rx_buffer_size` bytes per callback (1024 with permessage-deflate, already
/// inflated), so the limit counts inflated bytes: a 2 MiB message compressed to a few KB is refused.
/// Lws service thread only.
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
    }

    /// Most bytes one message may have.
    let limit: Int
    // The message so far; empty between messages so idle connections hold no buffer.
    private var buffer: [UInt8] = []

    init(limit: Int) {
        self.limit = limit
    }

    /// Adds one chunk. `isLast` is lws's "final fragment and nothing remaining in this frame";
    /// `binary` says the message came in binary frames, which need not be UTF-8.
    mutating func append(_ chunk: UnsafeRawBufferPointer, isLast: Bool, binary: Bool = false) -> Outcome {
        let total = buffer.count + chunk.count
        guard total <= limit else {
            buffer = []
            return .tooLarge(receivedBytes: total)
        }
        buffer.append(contentsOf: chunk)
        guard isLast else { return .incomplete }
        defer { buffer = [] }
        // lws (LWS_SERVER_OPTION_VALIDATE_UTF8) checks text as it arrives, but with permessage-deflate
        // negotiated it misses a character cut off by the end of the message (lws 4.1.6 ops-ws.c only
        // checks that for the deflate outcomes EMPTY_FINAL and UNKNOWN).
        guard binary || Self.isUTF8(buffer) else { return .invalidUTF8 }
        return .complete(buffer)
    }

    /// True when `bytes` is well-formed UTF-8. Decodes without allocating.
    static func isUTF8(_ bytes: [UInt8]) -> Bool {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
