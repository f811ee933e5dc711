/// Joins the chunks lws hands over into whole messages, refusing any that grow past a limit.
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
    }

    /// Most bytes one message may have.
    let limit: Int
    // The message so far; empty between messages so idle connections hold no buffer.
    private var buffer: [UInt8] = []

    init(limit: Int) {
        self.limit = limit
    }

    /// Adds one chunk. `isLast` is lws's "final fragment and nothing remaining in this frame".
    mutating func append(_ chunk: UnsafeRawBufferPointer, isLast: Bool) -> Outcome {
        let total = buffer.count + chunk.count
        guard total <= limit else {
            buffer = []
            return .tooLarge(receivedBytes: total)
        }
        buffer.append(contentsOf: chunk)
        guard isLast else { return .incomplete }
        defer { buffer = [] }
        return .complete(buffer)
    }
}
