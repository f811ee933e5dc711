/// Decodes the binary frames of one `pinwheel.v1+bin` session, in the order they came: each frame's
/// deltas start from where the previous one's ended (docs/protocol.md, "Running state"), and it keeps
/// the features the client holds in the server's slot order, since removals name slots.
public struct BinaryDecoder: Sendable {
    private var state = BinaryRunningState()
    /// The ids the client holds, by slot, and each id's slot.
    private var held: [FeatureID] = []
    private var slots: [FeatureID: Int] = [:]

    public init() {}

    /// After a reconnect: the ids the client reported in its `held` messages, in the order sent
    /// (a repeated id keeps its first place), before the connection's first binary frame.
    public mutating func hold(_ ids: some Sequence<FeatureID>) {
        for id in ids { hold(id) }
    }

    /// A batch's removals (slots, descending), then its updates and adds, as the server applied them.
    private mutating func apply(_ b: BatchMessage, removedSlots: [Int]) {
        for slot in removedSlots {
            slots[held[slot]] = nil
            let last = held.removeLast()
            if slot < held.count {
                held[slot] = last
                slots[last] = slot
            }
        }
        for f in b.update { hold(f.id) }
        for f in b.add { hold(f.id) }
    }

    private mutating func hold(_ id: FeatureID) {
        if slots[id] == nil {
            slots[id] = held.count
            held.append(id)
        }
    }

    /// Decodes and checks the session's next binary frame: a `batch` or an `expansion`. A frame that
    /// does not decode leaves the running state as it was.
    /// - Throws: ``WireError`` naming what does not match the protocol and the byte where it is.
    public mutating func decode(_ bytes: UnsafeBufferPointer<UInt8>) throws(WireError) -> ServerMessage {
        var r = BinaryReader(bytes, state: state)
        let first = try r.byte("type", "first byte")
        let message: ServerMessage
        var removedSlots: [Int] = []
        switch first & 3 {
        case BinaryMessageEncoder.batchType:
            message = .batch(try ServerMessage.batch(&r, flags: first, held: held, removedSlots: &removedSlots))
        case BinaryMessageEncoder.expansionType: message = .expansion(try ServerMessage.expansion(&r, flags: first))
        default:
            throw r.invalid(
                "type", "first byte",
                "unknown message type \(first & 3) in \(ServerMessage.hex(first)); expected 1 (batch) or 2 (expansion)",
                at: 0)
        }
        guard r.remaining == 0 else {
            throw r.invalid("type", "end of message", "\(r.remaining) bytes left after the message")
        }
        state = r.state
        if case .batch(let b) = message { apply(b, removedSlots: removedSlots) }
        return message
    }

    /// Decodes the session's next binary frame, held in an array.
    public mutating func decode(_ bytes: [UInt8]) throws(WireError) -> ServerMessage {
        let result: Swift.Result<ServerMessage, WireError> = bytes.withUnsafeBufferPointer { buffer in
            Swift.Result { () throws(WireError) in try self.decode(buffer) }
        }
        return try result.get()
    }

    /// Decodes the session's next frame: JSON in a text frame, `pinwheel.v1+bin` in a binary one.
    public mutating func decode(frame: [UInt8], binary: Bool) throws(WireError) -> ServerMessage {
        binary ? try decode(frame) : try ServerMessage.decode(frame)
    }
}
