import Testing

@testable import PinwheelLoad

@Suite("Staleness: when each change was sent")
struct AckLogTests {
    @Test("answers arriving out of version order give each version its own request's age; a gap is in flight")
    func outOfOrder() {
        let log = AckLog()
        let start = ContinuousClock.now
        log.record(first: 1, last: 100, at: start)
        // The request holding 101 ... 200 is still in flight when 201 ... 300 is answered.
        log.record(first: 201, last: 300, at: start + .milliseconds(30))
        let now = start + .milliseconds(100)
        #expect(log.age(of: 0, at: now) == nil, "before the producer's first change")
        #expect(log.age(of: 50, at: now) == .milliseconds(100))
        #expect(log.age(of: 150, at: now) == .zero, "not acknowledged yet: the viewer was faster")
        #expect(log.age(of: 250, at: now) == .milliseconds(70))
        #expect(log.age(of: 301, at: now) == .zero)
        log.record(first: 101, last: 200, at: start + .milliseconds(60))
        #expect(log.age(of: 150, at: now) == .milliseconds(40))
        #expect(log.age(of: 250, at: now) == .milliseconds(70))
        #expect(log.count == 300)
    }

    @Test("the changes a batch brings are each aged by their own request's send time")
    func agesPerChange() {
        let log = AckLog()
        let start = ContinuousClock.now
        log.record(first: 1, last: 100, at: start)
        log.record(first: 101, last: 200, at: start + .milliseconds(40))
        log.record(first: 301, last: 400, at: start + .milliseconds(80))
        let now = start + .milliseconds(100)
        let ages = log.ages(after: 50, through: 350, at: now)
        // 51 ... 100, 101 ... 200, then 301 ... 350; 201 ... 300 is another producer's or unanswered.
        #expect(ages.map(\.0) == [.milliseconds(100), .milliseconds(60), .milliseconds(20)])
        #expect(ages.map(\.1) == [50, 100, 50])
        #expect(log.ages(after: 400, through: 500, at: now).isEmpty)
        #expect(log.ages(after: 10, through: 10, at: now).isEmpty)
        #expect(log.ages(after: 0, through: 1, at: now).map(\.1) == [1])
    }
}

@Suite("Staleness over several processes of the tool")
struct MergedStalenessTests {
    @Test("viewers in a part without the producer are set against the producer's part's acknowledgements")
    func acrossParts() throws {
        let start = ContinuousClock.now
        let acks = [
            AckLog.Entry(first: 1, last: 100, at: start),
            AckLog.Entry(first: 101, last: 200, at: start + .milliseconds(50)),
        ]
        func client(_ index: Int, arrivals: [(UInt64, Duration)]) -> LoadPart.Client {
            var figures = ClientFigures()
            var from: UInt64 = 0
            figures.newerData = arrivals.map { arrival in
                defer { from = arrival.0 }
                return ClientFigures.Arrival(from: from, version: arrival.0, at: start + arrival.1)
            }
            return LoadPart.Client(index: index, session: "s\(index)", figures: figures)
        }
        let histogram = LoadReportBuilder.latencyHistogram()
        let ingest = LoadReport.Ingest(
            rate: 1000, requests: 2, accepted: 200, rejected: 0, answerMs: .init(histogram, divisor: 1000),
            staleness: nil, error: nil)
        let producerPart = LoadPart(
            clients: [client(0, arrivals: [(100, .milliseconds(30))])], samples: [], wireBytes: 0, elapsed: .seconds(1),
            tool: nil, ingest: ingest, acknowledgements: acks)
        // The other part's viewer: 101 ... 150 arrived 70 ms after their request was sent, 151 ... 200
        // (by a quicker clock in another process) seemingly before.
        let viewersPart = LoadPart(
            clients: [
                client(1, arrivals: [(100, .milliseconds(10)), (150, .milliseconds(120)), (200, .milliseconds(40))])
            ],
            samples: [],
            wireBytes: 0, elapsed: .seconds(1), tool: nil)
        let merged = LoadPart.merged([viewersPart, producerPart])
        #expect(merged.acknowledgements == acks)
        var options = LoadOptions(url: "ws://127.0.0.1:1/")
        options.clients = 2
        let report = LoadRunner(options: options).report(merged, server: nil)
        let staleness = try #require(report.ingest?.staleness)
        #expect(staleness.count == 300, "every change each part's viewers received is a sample")
        #expect(abs(staleness.max - 70) < 0.1, "101 ... 150: 70 ms after their request")
        // 1 ... 100 at the producer's viewer 30 ms after, at the other 10 ms after; 151 ... 200 zero:
        // 50 at 0, 100 at 10, 100 at 30 and 50 at 70 ms.
        #expect(staleness.p50 > 9 && staleness.p50 < 11)
        #expect(staleness.p90 > 69 && staleness.p90 < 71)
        #expect(report.ingest?.accepted == 200)
    }
}
