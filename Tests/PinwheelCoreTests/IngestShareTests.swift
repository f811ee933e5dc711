import Testing

@testable import PinwheelCore

/// Producers' share of the CPU while viewers are connected, on a manual clock.
@Suite("Ingest share")
struct IngestShareTests {
    /// Runs one producer sending batches of `cost` back to back (waiting when told) for `seconds`;
    /// returns the CPU time its batches took in all.
    private static func spent(
        _ share: inout IngestShare<ManualClock>, producers: [String], cost: Duration, seconds: Int, viewers: Bool = true
    ) -> [String: Duration] {
        let clock = share.clock
        let end = clock.now.advanced(by: .seconds(seconds))
        var ready = Dictionary(uniqueKeysWithValues: producers.map { ($0, clock.now) })
        var spent = Dictionary(uniqueKeysWithValues: producers.map { ($0, Duration.zero) })
        while true {
            // The producer ready first goes next.
            let (name, at) = ready.min { $0.value < $1.value }!
            guard at < end else { break }
            clock.advance(to: at)
            if let wait = share.wait(producer: name, viewers: viewers) {
                ready[name] = clock.now.advanced(by: wait)
                continue
            }
            share.charge(producer: name, cost)
            spent[name]! += cost
            // Its thread does the work; the others' threads run meanwhile on other cores.
            ready[name] = clock.now.advanced(by: cost)
        }
        return spent
    }

    @Test("while viewers are connected one producer gets its share of a core, give or take one burst and one batch")
    func oneProducerCapped() {
        var share = IngestShare(clock: ManualClock(), share: 0.25)
        let spent = Self.spent(&share, producers: ["a"], cost: .milliseconds(10), seconds: 10)["a"]!
        #expect(spent >= .milliseconds(2500 - 10))
        #expect(spent <= .milliseconds(2500) + IngestShare<ManualClock>.burst + .milliseconds(10))
    }

    @Test("producers share it evenly")
    func producersFair() {
        var share = IngestShare(clock: ManualClock(), share: 0.3)
        let spent = Self.spent(&share, producers: ["a", "b", "c"], cost: .milliseconds(5), seconds: 10)
        let total = spent.values.reduce(.zero, +)
        #expect(total <= .seconds(3) + IngestShare<ManualClock>.burst * 3 + .milliseconds(15))
        #expect(total >= .milliseconds(2900))
        for (_, mine) in spent { #expect(mine >= .milliseconds(950) && mine <= .milliseconds(1100), "\(spent)") }
    }

    @Test("with no viewer connected producers never wait, and their debt is forgiven")
    func noViewersNoWait() {
        let clock = ManualClock()
        var share = IngestShare(clock: clock, share: 0.1)
        let spent = Self.spent(&share, producers: ["a"], cost: .milliseconds(10), seconds: 2, viewers: false)["a"]!
        #expect(spent == .seconds(2))
        share.charge(producer: "a", .seconds(5))
        #expect(share.wait(producer: "a", viewers: true) != nil, "in debt while viewers are connected")
        #expect(share.wait(producer: "a", viewers: false) == nil)
        #expect(share.wait(producer: "a", viewers: true) == nil)
    }

    @Test("a debt is paid off at the producer's part of the share, and idle producers stop counting after a second")
    func waitForDebt() {
        let clock = ManualClock()
        var share = IngestShare(clock: clock, share: 0.5)
        #expect(share.wait(producer: "a", viewers: true) == nil)
        #expect(share.wait(producer: "b", viewers: true) == nil)
        #expect(share.activeProducers == 2)
        share.charge(producer: "a", IngestShare<ManualClock>.burst + .milliseconds(100))
        // 100 ms of debt at a quarter of a core: 400 ms.
        #expect(share.wait(producer: "a", viewers: true) == .milliseconds(400))
        clock.advance(by: .seconds(2))
        #expect(share.activeProducers == 0)
        #expect(share.wait(producer: "a", viewers: true) == nil, "paid off in two seconds at half a core alone")
    }
}
