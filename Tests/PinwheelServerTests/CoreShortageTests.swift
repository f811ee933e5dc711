import Testing

@testable import PinwheelServer

@Suite("Core shortage")
struct CoreShortageTests {
    /// Feeds readings a window apart whose idle shares are `shares`; the judgements after each.
    private func judged(_ shares: [Double]) -> [Bool] {
        var shortage = CoreShortage()
        var at = ContinuousClock.now
        var reading = CoreShortage.Reading(idle: 0, total: 0)
        #expect(shortage.isDue(at: at))
        #expect(shortage.read(reading, at: at) == nil)
        var seen: [Bool] = []
        for share in shares {
            #expect(!shortage.isDue(at: at + CoreShortage.window / 2))
            at += CoreShortage.window
            #expect(shortage.isDue(at: at))
            reading.idle += 200 * share
            reading.total += 200
            let before = shortage.isShort
            let change = shortage.read(reading, at: at)
            #expect(change == (shortage.isShort == before ? nil : shortage.isShort))
            seen.append(shortage.isShort)
        }
        return seen
    }

    @Test("short below 5 % idle, no longer above 15 %, unchanged between")
    func hysteresis() {
        let shares = [0.30, 0.10, 0.04, 0.10, 0.14, 0.16, 0.10, 0.0]
        #expect(judged(shares) == [false, false, true, true, true, false, false, true])
    }

    @Test("a reading whose counters did not move judges nothing")
    func stalled() {
        var shortage = CoreShortage()
        let at = ContinuousClock.now
        let reading = CoreShortage.Reading(idle: 10, total: 100)
        #expect(shortage.read(reading, at: at) == nil)
        #expect(shortage.read(reading, at: at + .seconds(1)) == nil)
        #expect(!shortage.isShort)
    }

    @Test("this machine's /proc/stat reads, its idle time within its total")
    func readsProc() throws {
        let reading = try #require(CoreShortage.Reading.now())
        #expect(reading.total > 0 && reading.idle >= 0 && reading.idle <= reading.total)
    }
}
