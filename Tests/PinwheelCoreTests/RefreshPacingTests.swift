import Testing

@testable import PinwheelCore

/// The wait between two refreshes of a live index, against how promptly viewports are answered.
@Suite("Refresh pacing")
struct RefreshPacingTests {
    static let shortest = Duration.milliseconds(100)

    @Test("it starts at the configured interval and stays there while viewports are answered promptly")
    func promptViewportsKeepTheInterval() {
        var pacing = RefreshPacing(shortest: Self.shortest)
        #expect(pacing.interval == Self.shortest)
        for _ in 0..<50 { pacing.observe(answered: 500, slow: 1) }
        #expect(pacing.interval == Self.shortest)
        pacing.observe(answered: 0, slow: 0)
        #expect(pacing.interval == Self.shortest)
    }

    @Test("more than 1 % slow first batches stretch it by half each time, to three times the configured one")
    func slowViewportsStretchIt() {
        var pacing = RefreshPacing(shortest: Self.shortest)
        pacing.observe(answered: 500, slow: 6)
        #expect(pacing.interval == .milliseconds(150))
        pacing.observe(answered: 500, slow: 50)
        #expect(pacing.interval == .milliseconds(225))
        for _ in 0..<10 { pacing.observe(answered: 500, slow: 50) }
        #expect(pacing.interval == .milliseconds(300))
        #expect(pacing.longest == .milliseconds(300))
    }

    @Test("a few slow viewports on a quiet server, or exactly 1 %, do not stretch it")
    func fewSlowViewportsDoNot() {
        var pacing = RefreshPacing(shortest: Self.shortest)
        pacing.observe(answered: 4, slow: 2)
        pacing.observe(answered: 500, slow: 5)
        #expect(pacing.interval == Self.shortest)
    }

    @Test("it comes back a fiftieth at a time once fewer than 0.25 % are slow, and holds in between")
    func itRelaxesSlowlyAndHolds() {
        var pacing = RefreshPacing(shortest: Self.shortest)
        for _ in 0..<10 { pacing.observe(answered: 500, slow: 50) }
        // 0.5 % slow: between the two thresholds.
        pacing.observe(answered: 1000, slow: 5)
        #expect(pacing.interval == .milliseconds(300))
        pacing.observe(answered: 1000, slow: 1)
        #expect(pacing.interval == .milliseconds(294))
        var refreshes = 1
        while pacing.interval > Self.shortest {
            pacing.observe(answered: 1000, slow: 0)
            refreshes += 1
        }
        #expect(pacing.interval == Self.shortest)
        // ln 3 / ln(50/49): about 55 refreshes, some seconds at these intervals.
        #expect((50...60).contains(refreshes), "\(refreshes) refreshes")
    }
}
