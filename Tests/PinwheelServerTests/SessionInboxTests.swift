import PinwheelCore
import Testing

@testable import PinwheelServer

@Suite("A session's inbox")
struct SessionInboxTests {
    @Test("the queue asked for is the most urgent event's, however many events wait")
    func mostUrgentQueue() {
        var inbox = SessionInbox()
        inbox.append(.tick)
        #expect(inbox.enqueue() == .flow)
        for _ in 0..<100 { inbox.append(.tick) }
        // Already waiting in the flow queue: nothing more to submit.
        #expect(inbox.enqueue() == nil)
        inbox.append(.opened)
        #expect(inbox.enqueue() == .request)
        #expect(inbox.needed == .request)
    }

    @Test("a running session is never submitted; its turn's end submits what arrived meanwhile")
    func runningSession() {
        var inbox = SessionInbox()
        inbox.append(.dataChanged)
        #expect(inbox.enqueue() == .refresh)
        inbox.running = true
        inbox.queued = nil
        #expect(inbox.takeEvents().count == 1)
        #expect(inbox.needed == nil)
        inbox.append(.tick)
        #expect(inbox.enqueue() == nil)
        inbox.running = false
        #expect(inbox.enqueue() == .flow)
    }

    @Test("a second dataChanged before the turn is dropped; after the turn took the first, it waits again")
    func dataChangedOnce() {
        var inbox = SessionInbox()
        inbox.append(.dataChanged)
        inbox.append(.tick)
        inbox.append(.dataChanged)
        let taken = inbox.takeEvents()
        #expect(taken.count == 2)
        #expect(taken.filter { if case .dataChanged = $0 { true } else { false } }.count == 1)
        inbox.append(.dataChanged)
        #expect(inbox.events.count == 1)
        #expect(inbox.enqueue() == .refresh)
    }
}
