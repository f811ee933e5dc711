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
        let producer = Producer(options: producerOptions)
        let thread = Thread { [self] in
            defer { done.signal() }
            let points = (try? MetricsScrape.fetch(host: url.host, port: url.port))?.value("pinwheel_dataset_points")
            var mix = ChangeMix(points: Int(points ?? 1000), seed: options.seed)
            do {
                try producer.run(source: &mix, until: until, inFlight: Self.inFlight) { [self] ack in
                    let accepted = UInt64(ack.answer.accepted)
                    if accepted > 0 {
                        acks.record(first: ack.answer.version - accepted + 1, last: ack.answer.version, at: ack.ackedAt)
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

    /// Waits for the producer to stop and sums it up.
    func finish() -> LoadReport.Ingest {
        done.wait()
        return LoadReport.Ingest(
            rate: options.ingestRate, requests: requests, accepted: Int(acks.count), rejected: rejected,
            answerMs: .init(answers, divisor: 1000), staleness: nil, error: failure)
    }
}
