import Testing

@testable import PinwheelServer

@Suite("Handing free memory back")
struct AllocatorTrimTests {
    /// What happens at each second (in milliseconds from the start): a compaction installed, or the
    /// index thread asking whether to trim.
    enum Step {
        case compacted(Int)
        case ask(Int)
    }

    /// The answers to the steps' questions, in order.
    private func answers(_ steps: [Step]) -> [Bool] {
        var trim = AllocatorTrim()
        let start = ContinuousClock.now
        var out: [Bool] = []
        for step in steps {
            switch step {
            case .compacted(let ms): trim.compacted(at: start + .milliseconds(ms))
            case .ask(let ms): out.append(trim.isDue(at: start + .milliseconds(ms)))
            }
        }
        return out
    }

    @Test("a trim comes a settling second after a compaction, at most once every 5 s, never without one")
    func timing() {
        #expect(answers([.ask(60_000)]) == [false])
        #expect(answers([.compacted(0), .ask(999), .ask(1000), .ask(2000)]) == [false, true, false])
        // Compactions every 2 s under load: one trim in each 5 s; the last one after the changes stop
        // is trimmed whenever it comes.
        #expect(
            answers([
                .compacted(0), .ask(1000), .compacted(2000), .ask(4000), .compacted(4000), .ask(5999), .ask(6000),
                .compacted(7000), .ask(8000), .ask(11_000),
            ]) == [true, false, false, true, false, true])
    }
}
