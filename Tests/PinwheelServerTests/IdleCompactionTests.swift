import Foundation
import Testing

@testable import PinwheelServer

@Suite("Compactions on idle cores count as idle")
struct IdleCompactionTests {
    @Test("a compaction's CPU time counts while it runs on idle cores, and no more once it ends or yields")
    func countsUntilEnd() throws {
        let spinning = SpinningThread(asIdleCompaction: true)
        defer { spinning.stop() }
        var state = try #require(spinning.idle)
        #expect(state.thread != nil)
        let first = state.spent
        try spinning.waitForCPU(.milliseconds(10))
        let running = state.spent
        #expect(running - first >= .milliseconds(10))
        state.end()
        #expect(state.thread == nil)
        let ended = state.spent
        #expect(ended >= running)
        // The thread goes on computing: once its own clock shows it, the state must not have counted it.
        try spinning.waitForCPU(.milliseconds(10))
        #expect(state.spent == ended)
    }

    @Test("with nothing on idle cores, nothing is added")
    func nothingRunning() {
        var state = IdleCompaction()
        #expect(state.spent == .zero)
        state.end()
        #expect(state.spent == .zero)
    }

    @Test("the machine's reading counts the time given as idle, in /proc/stat's ticks")
    func readingCountsIt() throws {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let plain = try #require(CoreShortage.Reading.now())
        let counted = try #require(CoreShortage.Reading.now(alsoIdle: .seconds(3)))
        let added = counted.idle - plain.idle
        // The machine may idle a little between the two readings.
        #expect(added >= 3 * ticks && added < 3 * ticks + 50)
        #expect(counted.total - plain.total < 50)
    }
}
