import Testing

@testable import PinwheelLoad

@Suite("Staleness: when each change was acknowledged")
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
            figures.newerData = arrivals.map { ClientFigures.Arrival(version: $0.0, at: start + $0.1) }
            return LoadPart.Client(index: index, session: "s\(index)", figures: figures)
        }
        let histogram = LoadReportBuilder.latencyHistogram()
        let ingest = LoadReport.Ingest(
            rate: 1000, requests: 2, accepted: 200, rejected: 0, answerMs: .init(histogram, divisor: 1000),
            staleness: nil, error: nil)
        let producerPart = LoadPart(
            clients: [client(0, arrivals: [(100, .milliseconds(30))])], samples: [], wireBytes: 0, elapsed: .seconds(1),
            tool: nil, ingest: ingest, acknowledgements: acks)
        // The other part's viewer: 150 arrived 70 ms after its answer, 200 before its answer came.
        let viewersPart = LoadPart(
            clients: [client(1, arrivals: [(150, .milliseconds(120)), (200, .milliseconds(40))])], samples: [],
            wireBytes: 0, elapsed: .seconds(1), tool: nil)
        let merged = LoadPart.merged([viewersPart, producerPart])
        #expect(merged.acknowledgements == acks)
        var options = LoadOptions(url: "ws://127.0.0.1:1/")
        options.clients = 2
        let report = LoadRunner(options: options).report(merged, server: nil)
        let staleness = try #require(report.ingest?.staleness)
        #expect(staleness.count == 3, "every part's arrivals are samples")
        #expect(abs(staleness.max - 70) < 0.1, "the latest: 150, 70 ms after its acknowledgement")
        #expect(staleness.p50 > 29 && staleness.p50 < 31, "100, 30 ms after; 200 reached its viewer first: zero")
        #expect(report.ingest?.accepted == 200)
    }
}
