import Foundation
import Synchronization
import Testing

@testable import PinwheelServer

/// Which bells rang, in order, and when.
private final class RingLog: Sendable {
    private let rings = Mutex<[(bell: Int, at: ContinuousClock.Instant)]>([])

    func ring(_ bell: Int) { rings.withLock { $0.append((bell, .now)) } }
    var all: [(bell: Int, at: ContinuousClock.Instant)] { rings.withLock { $0 } }

    /// Waits up to `timeout` for `count` rings.
    func wait(for count: Int, timeout: Duration = .seconds(10)) {
        let deadline = ContinuousClock.now + timeout
        while all.count < count && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.005) }
    }
}

private final class Bell: AlarmTarget {
    let name: Int
    let log: RingLog

    init(_ name: Int, log: RingLog) {
        self.name = name
        self.log = log
    }

    func alarmRang() { log.ring(name) }
}

@Suite("Alarms")
struct AlarmsTests {
    @Test("alarms ring in deadline order, none before its deadline, whatever the order they were set in")
    func ringInOrder() throws {
        let alarms = Alarms()
        defer { alarms.stop() }
        let log = RingLog()
        let bells = (0..<40).map { Bell($0, log: log) }
        let start = ContinuousClock.now
        // Set in a scrambled order; bell n is due n × 5 ms from the start.
        var deadlines: [Int: ContinuousClock.Instant] = [:]
        for n in (0..<40).map({ ($0 * 17) % 40 }) {
            deadlines[n] = start + .milliseconds(n * 5)
            alarms.wake(bells[n], at: deadlines[n]!)
        }
        log.wait(for: 40)
        let rung = log.all
        #expect(rung.map(\.bell) == Array(0..<40))
        #expect(rung.allSatisfy { $0.at >= deadlines[$0.bell]! })
    }

    @Test("an alarm set earlier than the one being waited for rings first")
    func earlierAlarmInterrupts() throws {
        let alarms = Alarms()
        defer { alarms.stop() }
        let log = RingLog()
        let late = Bell(1, log: log)
        alarms.wake(late, at: .now + .seconds(2))
        Thread.sleep(forTimeInterval: 0.05)
        let soon = Bell(2, log: log)
        let set = ContinuousClock.now
        alarms.wake(soon, at: set + .milliseconds(30))
        log.wait(for: 1)
        let first = try #require(log.all.first)
        #expect(first.bell == 2)
        // Well before the 2 s alarm the thread was waiting for.
        #expect(first.at - set < .seconds(1))
    }

    @Test("a cancelled target never rings and is let go at once; the others still ring in order")
    func cancelled() throws {
        let alarms = Alarms()
        defer { alarms.stop() }
        let log = RingLog()
        let start = ContinuousClock.now
        var bells = (0..<40).map { Bell($0, log: log) }
        for n in (0..<40).map({ ($0 * 17) % 40 }) {
            alarms.wake(bells[n], at: start + .milliseconds(100 + n * 5))
        }
        // Every third bell, twice over for bell 0, cancelled before any is due.
        alarms.wake(bells[0], at: start + .milliseconds(150))
        weak let cancelledBell = bells[3]
        for n in stride(from: 0, to: 40, by: 3) { alarms.cancel(bells[n]) }
        // The test lets go of its own references to them: only the alarms could still hold them.
        bells = bells.enumerated().map { $0.offset % 3 == 0 ? Bell(-1, log: log) : $0.element }
        #expect(cancelledBell == nil)
        let kept = (0..<40).filter { $0 % 3 != 0 }
        log.wait(for: kept.count)
        Thread.sleep(forTimeInterval: 0.05)
        #expect(log.all.map(\.bell) == kept)
    }
}
