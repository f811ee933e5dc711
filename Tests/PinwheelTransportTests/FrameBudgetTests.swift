import Testing

@testable import PinwheelTransport

@Suite("The frame budget, the stall rule, the idle timeout and the connection cap")
struct FrameBudgetTests {
    let policy = FramePolicy(framesPerSecond: 100, seconds: 5, idleTimeout: .seconds(3))

    /// A connection's account fed second by second: the socket's byte count and the sweep go on from
    /// one `run` to the next.
    struct Feed {
        var budget: FrameBudget
        let tls: Bool
        var second = 0
        var wire: Int64 = 200

        init(countsMessages: Bool = true, tls: Bool = false) {
            budget = FrameBudget(atSweep: 0, wire: 200, countsMessages: countsMessages)
            self.tls = tls
        }

        /// Samples once a second (4 sweeps) for `seconds` seconds, the socket receiving `wirePerSecond`
        /// bytes and the application `messages` messages of `payload` bytes each second.
        /// - Returns: the second of this run at which the budget ran out, or nil.
        mutating func run(
            seconds: Int, wirePerSecond: Int64, messages: Int, payload: Int, policy: FramePolicy
        ) -> Int? {
            for k in 1...seconds {
                second += 1
                for _ in 0..<messages {
                    budget.chunkArrived(bytes: payload)
                    budget.messageArrived(atSweep: UInt32(second * 4))
                }
                wire += wirePerSecond
                let over = budget.sample(
                    wire: wire, atSweep: UInt32(second * 4), sweepsPerSecond: 4, tls: tls, policy: policy)
                if over { return k }
            }
            return nil
        }
    }

    @Test("1,000 empty pings a second, which lws never reports, run the budget out at the fifth second")
    func pingFlood() {
        var feed = Feed()
        let ranOut = feed.run(seconds: 7, wirePerSecond: 6_000, messages: 0, payload: 0, policy: policy)
        #expect(ranOut == 5)
    }

    @Test("a viewer's 50 messages a second of 300 bytes, with their headers, count as 50 frames, not more")
    func viewer() {
        // 300 bytes of payload, 8 of header each (the 16-bit length form), plus a ping.
        var feed = Feed()
        let plain = feed.run(seconds: 20, wirePerSecond: 50 * 308 + 6, messages: 50, payload: 300, policy: policy)
        var tlsFeed = Feed(tls: true)
        let tls = tlsFeed.run(
            seconds: 20, wirePerSecond: 50 * (308 + 29) + 35, messages: 50, payload: 300, policy: policy)
        #expect(plain == nil)
        #expect(tls == nil)
    }

    @Test("101 messages a second for 5 s run the budget out; a quiet second starts over")
    func messageFlood() {
        var feed = Feed()
        let fourSeconds = feed.run(seconds: 4, wirePerSecond: 101 * 20, messages: 101, payload: 10, policy: policy)
        let quiet = feed.run(seconds: 1, wirePerSecond: 0, messages: 0, payload: 0, policy: policy)
        let fourMore = feed.run(seconds: 4, wirePerSecond: 101 * 20, messages: 101, payload: 10, policy: policy)
        let fifth = feed.run(seconds: 1, wirePerSecond: 101 * 20, messages: 101, payload: 10, policy: policy)
        #expect([fourSeconds, quiet, fourMore] == [nil, nil, nil])
        #expect(fifth == 1)
    }

    @Test("on a connection whose messages another limit governs, only control frames count")
    func exemptMessages() {
        var feed = Feed(countsMessages: false)
        let ranOut = feed.run(seconds: 10, wirePerSecond: 500 * 20, messages: 500, payload: 10, policy: policy)
        #expect(ranOut == nil)
    }

    @Test("output that waits while the peer acknowledges nothing counts stalled seconds; progress resets them")
    func stall() {
        var budget = FrameBudget(atSweep: 0, wire: 200, countsMessages: true)
        let samples: [(pending: Bool, acked: Int64)] = [
            (true, 1_000), (true, 1_000), (true, 1_000), (true, 5_000), (false, 5_000), (true, 5_000),
        ]
        let stalled = samples.map { budget.sampleOutput(pending: $0.pending, acked: $0.acked) }
        #expect(stalled == [0, 1, 2, 0, 0, 1])
    }

    @Test("only messages end idleness: a session is idle the idle timeout after its last message")
    func idle() {
        var budget = FrameBudget(atSweep: 0, wire: 200, countsMessages: true)
        let idleSweeps = SweepClock.sweeps(in: .seconds(3))
        #expect(idleSweeps == 12)
        #expect(!budget.isIdle(atSweep: 11, idleSweeps: idleSweeps))
        #expect(budget.isIdle(atSweep: 12, idleSweeps: idleSweeps))
        budget.messageArrived(atSweep: 10)
        #expect(!budget.isIdle(atSweep: 21, idleSweeps: idleSweeps))
        #expect(budget.isIdle(atSweep: 22, idleSweeps: idleSweeps))
    }

    @Test(
        "the connection cap counts WebSockets once and other connections twice, and refuses past it or while descriptors are short"
    )
    func admission() {
        var admission = ConnectionAdmission(cap: 5)
        var verdicts: [Bool] = []
        verdicts.append(admission.admits(webSockets: 0, starved: false))
        admission.created()
        verdicts.append(admission.admits(webSockets: 0, starved: false))
        admission.created()
        // Two HTTP connections weigh 4, a third would make 6.
        verdicts.append(admission.admits(webSockets: 0, starved: false))
        // One of them became a WebSocket: 3, and 5 with a new one.
        verdicts.append(admission.admits(webSockets: 1, starved: false))
        admission.created()
        // Three WebSockets weigh 3; two WebSockets and an HTTP connection 4.
        verdicts.append(admission.admits(webSockets: 3, starved: false))
        verdicts.append(admission.admits(webSockets: 2, starved: false))
        admission.destroyed()
        admission.destroyed()
        verdicts.append(admission.admits(webSockets: 1, starved: false))
        verdicts.append(admission.admits(webSockets: 1, starved: true))
        #expect(verdicts == [true, true, false, true, true, false, true, false])
        #expect(admission.refused == 3)
        let now = ContinuousClock.now
        let first = admission.logLine(now: now)
        _ = admission.admits(webSockets: 0, starved: true)
        let tooSoon = admission.logLine(now: now + .milliseconds(500))
        let second = admission.logLine(now: now + .seconds(1))
        #expect(first?.contains("refused 3 connections") == true)
        #expect(tooSoon == nil)
        #expect(second?.contains("refused 1 connections") == true)
    }

    @Test("the descriptor reserve: 128 of 1,024, and never the whole limit")
    func reserve() {
        #expect(DescriptorBudget.reserve(forLimit: 1024) == 128)
        #expect(DescriptorBudget(startingSoftLimit: 1024, softLimit: 1024, hardLimit: 1024).connections == 896)
        #expect(DescriptorBudget.reserve(forLimit: 65536) == 64 + 4096)
        #expect(DescriptorBudget(startingSoftLimit: 50, softLimit: 50, hardLimit: 50).connections == 1)
    }
}
