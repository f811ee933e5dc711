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

    @Test("an alarm set earlier than the one being waited for rings first; a released target is skipped")
    func earlierAlarmInterrupts() throws {
        let alarms = Alarms()
        defer { alarms.stop() }
        let log = RingLog()
        let late = Bell(1, log: log)
        alarms.wake(late, at: .now + .seconds(2))
        var released: Bell? = Bell(3, log: log)
        alarms.wake(released!, at: .now + .milliseconds(20))
        released = nil
        Thread.sleep(forTimeInterval: 0.05)
        let soon = Bell(2, log: log)
        let set = ContinuousClock.now
        alarms.wake(soon, at: set + .milliseconds(30))
        log.wait(for: 1)
        let first = try #require(log.all.first)
        #expect(first.bell == 2)
        // Well before the 2 s alarm the thread was waiting for.
        #expect(first.at - set < .seconds(1))
        #expect(!log.all.contains { $0.bell == 3 })
    }
}
