import CLibWebSockets
import Synchronization

/// The outbound queues of every connection of one server or client, behind one Mutex.
///
/// Any thread enqueues (`enqueue`, `requestClose`); the lws service thread takes the list of
/// connections to wake (`takeWakeList`) and pops what to write (`next`). Each queue is capped in
/// bytes, so memory stays bounded however slowly a peer reads.
final class Outboxes: Sendable {
    /// What the service thread should do next for one connection.
    enum Item {
        /// Write this message.
        case message(Message)
        /// Close the connection with this code and reason.
        case close(CloseCode, String)
    }

    /// One queued message.
    struct Message {
        /// The payload as it goes to lws_write, behind `SHIM_LWS_PRE` bytes of headroom for lws.
        var buffer: [UInt8]
        /// A binary frame rather than a text one.
        var binary: Bool
        var deflate: MessageDeflate
        /// Payload bytes before any compression.
        var sourceCount: Int

        /// Payload bytes handed to lws_write.
        var payloadCount: Int { buffer.count - Int(SHIM_LWS_PRE) }
    }

    private struct Queue {
        let deflate: DeflatePolicy
        // Oldest at `head`; slots before `head` are already written.
        var messages: [Message] = []
        var head = 0
        // Payload bytes waiting as they will be written (compressed, if compressed when queued).
        var bytes = 0
        // Set by close or by hitting the cap; written after the messages still queued.
        var close: (code: CloseCode, reason: String)?
        // True while the id sits in the wake list, so it is listed once.
        var listed = false

        var hasMessages: Bool { head < messages.count }

        init(deflate: DeflatePolicy) {
            self.deflate = deflate
        }

        mutating func popMessage() -> Message? {
            guard hasMessages else { return nil }
            let message = messages[head]
            messages[head].buffer = []
            head += 1
            // Compact once the written prefix dominates, so the array does not grow forever.
            if head == messages.count {
                messages.removeAll(keepingCapacity: messages.capacity <= 64)
                head = 0
            } else if head > 32 && head * 2 > messages.count {
                messages.removeFirst(head)
                head = 0
            }
            bytes -= message.payloadCount
            return message
        }

        mutating func dropMessages() {
            messages = []
            head = 0
            bytes = 0
        }
    }

    private struct State {
        var queues: [ConnectionID: Queue] = [:]
        var wakeList: [ConnectionID] = []
        var totalBytes = 0
        var overCapacityCloses = 0

        // Puts the queue at `index` on the wake list once; true when the list was empty before,
        // i.e. when the service loop needs a wake-up (one wake-up serves the whole list).
        mutating func list(at index: Dictionary<ConnectionID, Queue>.Index) -> Bool {
            guard !queues.values[index].listed else { return false }
            queues.values[index].listed = true
            wakeList.append(queues.keys[index])
            return wakeList.count == 1
        }
    }

    /// The close reason sent to a peer whose queue hit the cap.
    static let notReadingReason = "client is not reading"

    private let state = Mutex(State())
    private let capacity: Int

    /// - Parameter capacity: most payload bytes one connection may have queued, counted as they will
    ///   be written.
    init(capacity: Int) {
        self.capacity = capacity
    }

    /// Starts accepting messages for `id`, meeting permessage-deflate as `deflate` says. Any thread.
    func register(_ id: ConnectionID, deflate: DeflatePolicy) {
        state.withLock { $0.queues[id] = Queue(deflate: deflate) }
    }

    /// Forgets `id` and frees whatever it still had queued. Any thread.
    func unregister(_ id: ConnectionID) {
        state.withLock { state in
            if let queue = state.queues.removeValue(forKey: id) {
                state.totalBytes -= queue.bytes
            }
        }
    }

    /// Queues one text message for `id`, copying it behind lws headroom. Any thread.
    /// - Returns: what happened, and whether the service thread must be woken to notice.
    func enqueue(_ payload: UnsafeRawBufferPointer, to id: ConnectionID) -> (result: SendResult, wake: Bool) {
        // Copy before taking the lock: the copy is the expensive part and needs no protection.
        let headroom = Int(SHIM_LWS_PRE)
        let buffer = [UInt8](unsafeUninitializedCapacity: headroom + payload.count) { storage, count in
            storage.baseAddress!.initialize(repeating: 0, count: headroom)
            if let source = payload.baseAddress, payload.count > 0 {
                (storage.baseAddress! + headroom).initialize(
                    from: source.assumingMemoryBound(to: UInt8.self), count: payload.count)
            }
            count = headroom + payload.count
        }
        return enqueue(framed: buffer, to: id)
    }

    /// Queues one message already behind `SHIM_LWS_PRE` bytes of headroom: a text frame, or a binary
    /// one when `binary`. Compresses it first when the connection's policy says so. Any thread.
    /// - Returns: what happened, and whether the service thread must be woken to notice.
    func enqueue(framed buffer: [UInt8], binary: Bool = false, to id: ConnectionID) -> (result: SendResult, wake: Bool)
    {
        let sourceCount = buffer.count - Int(SHIM_LWS_PRE)
        // Compress before taking the lock for the append; a connection that goes meanwhile drops it.
        let policy = state.withLock { $0.queues[id]?.deflate } ?? .off
        var message = Message(
            buffer: buffer, binary: binary, deflate: policy.treatment(payloadCount: sourceCount, binary: binary),
            sourceCount: sourceCount)
        if message.deflate == .compressed, case .beforeQueueing(let windowBits) = policy {
            let compressed = buffer.withUnsafeBytes { bytes in
                MessageDeflate.compress(
                    UnsafeRawBufferPointer(rebasing: bytes[Int(SHIM_LWS_PRE)...]), windowBits: windowBits)
            }
            if let compressed {
                message.buffer = compressed
            } else {
                message.deflate = .none
            }
        }
        let payloadCount = message.payloadCount
        return state.withLock { state in
            // Work on the stored queue through its index: a copy would duplicate the message array.
            guard let index = state.queues.index(forKey: id), state.queues.values[index].close == nil else {
                return (.notConnected, false)
            }
            let waiting = state.queues.values[index].bytes
            if waiting + payloadCount > capacity {
                // Drop everything: the peer is not reading, and the close frame must not wait behind it.
                state.totalBytes -= waiting
                state.queues.values[index].dropMessages()
                state.queues.values[index].close = (.policyViolation, Self.notReadingReason)
                state.overCapacityCloses += 1
                return (.overCapacity, state.list(at: index))
            }
            state.queues.values[index].messages.append(message)
            state.queues.values[index].bytes += payloadCount
            state.totalBytes += payloadCount
            return (.queued(queuedBytes: waiting + payloadCount), state.list(at: index))
        }
    }

    /// Asks for `id` to be closed, after what is queued unless `dropQueued`. Any thread.
    /// - Returns: whether the service thread must be woken to notice.
    func requestClose(_ id: ConnectionID, code: CloseCode, reason: String, dropQueued: Bool) -> Bool {
        state.withLock { state in
            guard let index = state.queues.index(forKey: id), state.queues.values[index].close == nil else {
                return false
            }
            if dropQueued {
                state.totalBytes -= state.queues.values[index].bytes
                state.queues.values[index].dropMessages()
            }
            state.queues.values[index].close = (code, reason)
            return state.list(at: index)
        }
    }

    /// A connection to wake, with the close it is waiting for, if any.
    typealias Wake = (id: ConnectionID, close: (code: CloseCode, reason: String)?)

    /// Replaces `list` with the connections that got something to write since the last call. The
    /// caller keeps the array for the next call, so a wake-up allocates nothing. Lws service thread only.
    func takeWakeList(into list: inout [Wake]) {
        list.removeAll(keepingCapacity: true)
        state.withLock { state in
            for id in state.wakeList {
                // By index: the key subscript's in-place update would allocate for a value this size.
                guard let index = state.queues.index(forKey: id) else {
                    list.append((id, nil))
                    continue
                }
                state.queues.values[index].listed = false
                list.append((id, state.queues.values[index].close))
            }
            state.wakeList.removeAll(keepingCapacity: true)
        }
    }

    /// Pops the next thing to write for `id`. Lws service thread only.
    /// - Returns: the item (nil when idle) and whether more is waiting after it.
    func next(for id: ConnectionID) -> (item: Item?, more: Bool) {
        state.withLock { state in
            guard let index = state.queues.index(forKey: id) else { return (nil, false) }
            guard let message = state.queues.values[index].popMessage() else {
                guard let close = state.queues.values[index].close else { return (nil, false) }
                return (.close(close.code, close.reason), false)
            }
            state.totalBytes -= message.payloadCount
            let queue = state.queues.values[index]
            return (.message(message), queue.hasMessages || queue.close != nil)
        }
    }

    /// Payload bytes queued for `id`, nil for an unknown connection. Any thread.
    func queuedBytes(for id: ConnectionID) -> Int? {
        state.withLock { $0.queues[id]?.bytes }
    }

    /// Payload bytes queued over all connections, and how many were closed for hitting the cap. Any thread.
    func totals() -> (queuedBytes: Int, overCapacityCloses: Int) {
        state.withLock { ($0.totalBytes, $0.overCapacityCloses) }
    }
}
