import Testing

@testable import PinwheelServer

@Suite("How long a compaction chases the changes made while it built")
struct CompactionChaseTests {
    /// Whether the chase takes another round after each of `rounds`, as one chase.
    private func decisions(_ rounds: [Int]) -> [Bool] {
        var chase = CompactionChase()
        return rounds.map { chase.continues(after: $0) }
    }

    @Test("rounds that shrink go on until one leaves few changes")
    func shrinkingRoundsEndWithFew() {
        #expect(decisions([33_000, 23_000, 8_500, 2_500, CompactionChase.few - 1]) == [true, true, true, true, false])
    }

    @Test("a first round with few changes ends it at once")
    func fewAtFirst() {
        #expect(decisions([0]) == [false])
    }

    @Test("a round not a quarter smaller than the last ends it: the thread is not catching up")
    func stopsWhenNotCatchingUp() {
        #expect(decisions([22_000, 16_500, 16_000]) == [true, true, false])
        #expect(decisions([10_000, 12_000]) == [true, false])
    }
}
