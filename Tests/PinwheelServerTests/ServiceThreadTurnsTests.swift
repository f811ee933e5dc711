import Testing

@testable import PinwheelServer

@Suite("Turns on the service thread")
struct ServiceThreadTurnsTests {
    @Test("the busy share is the thread's CPU time over each whole window, kept until the next closes")
    func busyShare() {
        var turns = ServiceThreadTurns()
        let start = ContinuousClock.now
        turns.measure(now: start, threadCPU: { .milliseconds(500) })
        #expect(turns.busyShare == 0)
        // Not a whole window yet: nothing is read.
        turns.measure(
            now: start + .milliseconds(60),
            threadCPU: {
                Issue.record("read mid-window")
                return .zero
            })
        turns.measure(now: start + .milliseconds(100), threadCPU: { .milliseconds(570) })
        #expect(abs(turns.busyShare - 0.7) < 1e-9)
        turns.measure(
            now: start + .milliseconds(150),
            threadCPU: {
                Issue.record("read mid-window")
                return .zero
            })
        #expect(abs(turns.busyShare - 0.7) < 1e-9)
        // The next window runs from 100 ms to 300 ms: 30 ms of CPU in 200.
        turns.measure(now: start + .milliseconds(300), threadCPU: { .milliseconds(600) })
        #expect(abs(turns.busyShare - 0.15) < 1e-9)
    }

    @Test("a turn runs here only on a thread with time to spare, no job waiting and a short last turn")
    func decision() {
        var idle = ServiceThreadTurns()
        let short = idle.runsHere(workersWaiting: 0, lastTurn: .microseconds(40))
        let behindAJob = idle.runsHere(workersWaiting: 1, lastTurn: .microseconds(40))
        let afterALongTurn = idle.runsHere(workersWaiting: 0, lastTurn: .milliseconds(2))
        #expect(short && !behindAJob && !afterALongTurn)

        var busy = ServiceThreadTurns()
        let start = ContinuousClock.now
        busy.measure(now: start, threadCPU: { .zero })
        busy.measure(now: start + .milliseconds(100), threadCPU: { .milliseconds(65) })
        let runs = busy.runsHere(workersWaiting: 0, lastTurn: .microseconds(40))
        #expect(busy.busyShare > ServiceThreadTurns.busiestShare && !runs)
    }

}
