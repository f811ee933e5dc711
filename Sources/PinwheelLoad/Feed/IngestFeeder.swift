import Foundation
import PinwheelCore
import PinwheelTransport

import struct Histogram.Histogram

/// The producer `pinwheel load --ingest-rate` runs beside its viewers: posts a mix of changes over the
/// server's loaded points at the given rate until the tour ends, and records each acknowledgement
/// for the viewers' staleness.
final class IngestFeeder: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let acks: AckLog
    private let options: LoadOptions
    // Written by the answers, one at a time, read after `done`.
    private var answers = Histogram<UInt64>(highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: .three)
    private var requests = 0
    private var rejected = 0
    private var failure: String?
    /// The requests accepted whole, and where each change went, for the still viewers.
    private var wholeRequests: [StillStaleness.Request] = []
    private var placed: [StillStaleness.Placed] = []

    /// Requests in flight at once: at 10,000 changes a second in requests of 500, answers may take
    /// 800 ms before the producer falls behind the rate asked (a saturated server answered in
    /// 400 ms at the median, 1.5 s at p99).
    static let inFlight = 16

    init(url: WebSocketURL, options: LoadOptions, acks: AckLog, until: ContinuousClock.Instant) {
        self.acks = acks
        self.options = options
        var producerOptions = Producer.Options(host: url.host, port: url.port, token: options.ingestToken ?? "")
        producerOptions.rate = options.ingestRate
        producerOptions.batch = options.ingestBatch
        // Requests at even intervals that divide the refresh interval would always land just before
        // a refresh, and measure the changes fresher than a producer unaware of it sees them.
        producerOptions.jitter = options.seed
        let producer = Producer(options: producerOptions)
        let thread = Thread { [self] in
            defer { done.signal() }
            let points = (try? MetricsScrape.fetch(host: url.host, port: url.port))?.value("pinwheel_dataset_points")
            var mix = PlacedChanges(
                ChangeMix(points: Int(points ?? 1000), seed: options.seed, tenants: options.tenants))
            defer { placed = mix.placed }
            do {
                try producer.run(source: &mix, until: until, inFlight: Self.inFlight) { [self] ack in
                    let accepted = UInt64(ack.answer.accepted)
                    if accepted > 0 {
                        // The clock starts before the request leaves, not when the producer hears back.
                        acks.record(first: ack.answer.version - accepted + 1, last: ack.answer.version, at: ack.sentAt)
                    }
                    if ack.answer.accepted == ack.sent {
                        wholeRequests.append(
                            StillStaleness.Request(
                                firstChange: ack.first, firstVersion: ack.answer.version - accepted + 1,
                                count: ack.sent, sentAt: ack.sentAt))
                    }
                    requests += 1
                    rejected += ack.answer.rejected.count
                    _ = answers.record(UInt64(LoadClient.micros(ack.sentAt.duration(to: ack.ackedAt))))
                }
            } catch {
                failure = "\(error)"
            }
        }
        thread.name = "pinwheel-load-ingest"
        thread.start()
    }

    /// Waits for the producer to stop and sums it up, with the staleness at the still viewers.
    /// - Parameters:
    ///   - still: the still viewers' views and arrivals.
    ///   - deliveredBy: changes sent later may be missing at a still viewer when the run ends.
    func finish(still: [StillStaleness.Viewer] = [], deliveredBy: ContinuousClock.Instant) -> LoadReport.Ingest {
        done.wait()
        var report = LoadReport.Ingest(
            rate: options.ingestRate, requests: requests, accepted: Int(acks.count), rejected: rejected,
            answerMs: .init(answers, divisor: 1000), staleness: nil, error: failure)
        if !still.isEmpty {
            let figures = StillStaleness(
                placed: placed, requests: wholeRequests, viewers: still, deliveredBy: deliveredBy)
            report.stillStaleness = .init(figures.staleness, divisor: 1000)
            report.stillLongestGapMs = figures.longestGap / .milliseconds(1)
            report.stillUndelivered = figures.undelivered
        }
        return report
    }
}

/// Changes from a source, noting where each one's point was before (when this source placed it) and
/// is after.
struct PlacedChanges<Base: IteratorProtocol<Change>>: IteratorProtocol {
    private var base: Base
    private var at: [PointKey: Coordinate] = [:]
    /// One per change given, in order.
    private(set) var placed: [StillStaleness.Placed] = []

    init(_ base: Base) {
        self.base = base
    }

    mutating func next() -> Change? {
        guard let change = base.next() else { return nil }
        switch change {
        case .upsert(let key, let lat, let lon, _, _):
            let after = Coordinate(lat: lat, lon: lon)
            placed.append(StillStaleness.Placed(before: at.updateValue(after, forKey: key), after: after))
        case .delete(let key, _):
            placed.append(StillStaleness.Placed(before: at.removeValue(forKey: key), after: nil))
        }
        return change
    }
}
