import Testing

@testable import PinwheelCore

/// Lines of jobs taken most urgent first with overdue jobs taking every other turn, as the server's
/// workers take viewers' requests, acks and refreshes.
@Suite("Aging lines")
struct AgingLinesTests {
    typealias Instant = ManualClock.Instant

    /// The server's lines: requests, flow (acks, timers), refreshes.
    static let slacks: [Duration] = [.zero, .milliseconds(10), .milliseconds(50)]
    /// Strict priority, as the workers took jobs before: a later line waits for the earlier ones to empty.
    static let strict: [Duration] = [.zero, .seconds(36_000), .seconds(36_000)]

    @Test("no job waiting gives nil, and the count follows pushes and pops")
    func emptyAndCount() {
        let clock = ManualClock()
        var lines = AgingLines<String, Instant>(slacks: Self.slacks)
        #expect(lines.pop(at: clock.now) == nil)
        lines.push("a", line: 2, at: clock.now)
        lines.push("b", line: 0, at: clock.now)
        #expect(lines.count == 2)
        #expect(lines.pop(at: clock.now) == "b")
        #expect(lines.count == 1)
        lines.removeAll()
        #expect(lines.pop(at: clock.now) == nil)
    }

    @Test("jobs none of which is overdue are taken in the lines' order, each line in arrival order")
    func strictWhileNoneOverdue() {
        let clock = ManualClock()
        var lines = AgingLines<String, Instant>(slacks: Self.slacks)
        for (name, line) in [("r1", 2), ("a1", 1), ("v1", 0), ("r2", 2), ("v2", 0), ("a2", 1)] {
            lines.push(name, line: line, at: clock.now)
        }
        clock.advance(by: .milliseconds(9))
        let order = (0..<6).compactMap { _ in lines.pop(at: clock.now) }
        #expect(order == ["v1", "v2", "a1", "a2", "r1", "r2"])
    }

    @Test("overdue jobs take every other turn, the longest overdue first, until none is left")
    func overdueTakeEveryOtherTurn() {
        let clock = ManualClock()
        var lines = AgingLines<String, Instant>(slacks: Self.slacks)
        lines.push("refresh", line: 2, at: clock.now)
        clock.advance(by: .milliseconds(45))
        lines.push("ack", line: 1, at: clock.now)
        for k in 1...4 { lines.push("viewport \(k)", line: 0, at: clock.now) }
        // The refresh overdue since 50 ms, the ack since 55 ms.
        clock.advance(by: .milliseconds(4))
        #expect(lines.pop(at: clock.now) == "viewport 1")
        clock.advance(by: .milliseconds(2))
        #expect(lines.pop(at: clock.now) == "refresh")
        clock.advance(by: .milliseconds(5))
        #expect(lines.pop(at: clock.now) == "viewport 2")
        #expect(lines.pop(at: clock.now) == "ack")
        #expect(lines.pop(at: clock.now) == "viewport 3")
        #expect(lines.pop(at: clock.now) == "viewport 4")
    }

    @Test("an overdue job of the most urgent line that has any is not taken out of turn")
    func overdueAloneIsJustNext() {
        let clock = ManualClock()
        var lines = AgingLines<String, Instant>(slacks: Self.slacks)
        lines.push("refresh 1", line: 2, at: clock.now)
        lines.push("refresh 2", line: 2, at: clock.now)
        clock.advance(by: .seconds(1))
        #expect(lines.pop(at: clock.now) == "refresh 1")
        #expect(lines.pop(at: clock.now) == "refresh 2")
    }

    /// What one simulated run of the workers saw.
    private struct Run {
        /// For each still viewer, how long after the change its refresh had run; nil if not by the end.
        var served: [Duration?]
        /// Viewports taken while some refresh was overdue, and refreshes taken meanwhile.
        var viewportsWhileOverdue = 0
        var refreshesWhileOverdue = 0
    }

    /// The workers on a manual clock: `workers` threads take turns of `turn` each; `movingViewers`
    /// sessions send a viewport each every `viewportPeriod` (a session waits in the queue once, as the
    /// server's do: viewports that arrive while it waits are answered by that turn); the index
    /// publishes at every multiple of `refreshEvery`, and the first publication after `changeAt`
    /// refreshes `stillViewers` sessions whose view the change reached.
    private static func simulate(
        slacks: [Duration], workers: Int = 2, turn: Duration = .milliseconds(2), movingViewers: Int,
        viewportPeriod: Duration = .milliseconds(100), refreshEvery: Duration, changeAt: Duration,
        stillViewers: Int, horizon: Duration = .seconds(5)
    ) -> Run {
        enum Job {
            case viewport(Int)
            case refresh(Int)
        }
        let clock = ManualClock()
        let start = clock.now
        var lines = AgingLines<Job, Instant>(slacks: slacks)
        var free = [Instant](repeating: start, count: workers)
        // Each moving session's next viewport, spread over the period, and whether it waits in the queue.
        var nextViewport: [Instant] = (0..<movingViewers).map { k in
            start.advanced(by: viewportPeriod * (Double(k) / Double(movingViewers)))
        }
        var queued = [Bool](repeating: false, count: movingViewers)
        let rounds = (changeAt / refreshEvery).rounded(.up)
        let publication = start.advanced(by: refreshEvery * rounds)
        var published = false
        var run = Run(served: [Duration?](repeating: nil, count: stillViewers))
        while run.served.contains(where: { $0 == nil }) {
            // The next thread to free up takes the next job, after everything that arrived by then.
            let w = free.indices.min { free[$0] < free[$1] }!
            clock.advance(to: free[w])
            guard start.duration(to: clock.now) < horizon else { break }
            for k in 0..<movingViewers where nextViewport[k] <= clock.now {
                if !queued[k] {
                    queued[k] = true
                    lines.push(.viewport(k), line: 0, at: nextViewport[k])
                }
                while nextViewport[k] <= clock.now { nextViewport[k] = nextViewport[k].advanced(by: viewportPeriod) }
            }
            if !published && publication <= clock.now {
                published = true
                for k in 0..<stillViewers { lines.push(.refresh(k), line: 2, at: publication) }
            }
            let overdue = published && publication.advanced(by: slacks[2]) <= clock.now
            guard let job = lines.pop(at: clock.now) else {
                // Idle until the next arrival.
                let nextArrival = nextViewport.min() ?? start.advanced(by: horizon)
                free[w] = published ? nextArrival : min(nextArrival, publication)
                continue
            }
            free[w] = clock.now.advanced(by: turn)
            switch job {
            case .viewport(let k):
                queued[k] = false
                if overdue && run.served.contains(where: { $0 == nil }) { run.viewportsWhileOverdue += 1 }
            case .refresh(let k):
                run.served[k] = start.advanced(by: changeAt).duration(to: free[w])
                if overdue { run.refreshesWhileOverdue += 1 }
            }
        }
        return run
    }

    @Test(
        "a still viewer whose view changed is served within the paced refresh interval, the slack and two turns, whatever the viewports",
        arguments: [0, 50, 100, 500, 2000])
    func stillViewerServedInTime(movingViewers: Int) {
        // Two threads of 2 ms turns answer 1,000 viewports a second: from none to twenty times that.
        let refreshEvery = RefreshPacing(shortest: .milliseconds(100)).longest
        let turn = Duration.milliseconds(2)
        for changeAt in [Duration.milliseconds(1), .milliseconds(150), .milliseconds(299)] {
            let run = Self.simulate(
                slacks: Self.slacks, turn: turn, movingViewers: movingViewers, refreshEvery: refreshEvery,
                changeAt: changeAt, stillViewers: 1)
            let bound = refreshEvery + Self.slacks[2] + turn * 2
            let served = run.served[0]
            #expect(served != nil && served! <= bound, "change at \(changeAt): served \(String(describing: served))")
        }
    }

    @Test(
        "fifty still viewers refreshed together are served within the slack and two turns each on the shared threads, and the viewports keep half the turns"
    )
    func manyStillViewers() {
        let turn = Duration.milliseconds(2)
        let run = Self.simulate(
            slacks: Self.slacks, turn: turn, movingViewers: 500, refreshEvery: .milliseconds(100),
            changeAt: .milliseconds(100), stillViewers: 50)
        // Published as the change comes; then the slack, two turns each for the 50 shared by the two
        // threads, and one running turn to finish.
        let bound = Self.slacks[2] + turn * 50 + turn * 2
        #expect(run.served.allSatisfy { $0 != nil && $0! <= bound }, "\(run.served)")
        #expect(run.viewportsWhileOverdue >= run.refreshesWhileOverdue - 1)
    }

    @Test("under strict priority the same viewports hold a still viewer's refresh back for good")
    func strictPriorityStarves() {
        let run = Self.simulate(
            slacks: Self.strict, movingViewers: 500, refreshEvery: .milliseconds(100), changeAt: .milliseconds(1),
            stillViewers: 1, horizon: .seconds(2))
        #expect(run.served == [nil])
    }
}
