import Dispatch
import Foundation
import PinwheelCore
import Synchronization

/// Producers' changes on their way into the log: the token, the rate, the lines, then one append
/// whose answer comes once the accepted changes are durable.
///
/// A request is applied line by line: its valid lines are appended together as one record (all of
/// them or, if the log fails, none), and the invalid ones are listed with their reasons. With
/// `atomic`, a request with any invalid line is refused whole and nothing of it is applied.
final class Ingest: Sendable {
    /// What one batch of changes came to.
    enum Outcome: Equatable {
        /// Appended (or nothing to append); `status` 200, or 400 when no line was valid or an atomic
        /// request had invalid lines.
        case answered(status: Int, IngestAnswer)
        /// Over the producer's rate: try again after this many seconds.
        case tooFast(retryAfter: Int)
        /// The log could not make the changes durable; none of them was applied.
        case failed(String)
    }

    let live: LiveData
    /// Changes per second each producer may send.
    let rate: Double
    /// Ingest's share of the CPU while viewers are connected; nil takes changes as fast as they come.
    let sharing: IngestSharing?
    private let token: [UInt8]
    private let buckets = Mutex<[String: TokenBucket<ContinuousClock>]>([:])

    init(live: LiveData, token: String, rate: Double, sharing: IngestSharing? = nil) {
        self.live = live
        self.token = Array(token.utf8)
        self.rate = rate
        self.sharing = sharing
    }

    /// Whether an `Authorization` header carries the token, compared in time that does not depend on
    /// where the first difference is.
    func authorizes(_ header: String?) -> Bool {
        guard let header, header.hasPrefix("Bearer ") else { return false }
        let given = Array(header.utf8.dropFirst("Bearer ".utf8.count))
        var difference = UInt8(given.count == token.count ? 0 : 1)
        for i in 0..<token.count {
            difference |= token[i] ^ (i < given.count ? given[i] : 0)
        }
        return difference == 0
    }

    /// Checks and appends a batch, blocking until the log has it durably. Any thread but the log's.
    /// - Parameters:
    ///   - body: NDJSON, one change per line.
    ///   - producer: whose rate the changes count against.
    ///   - atomic: refuse the whole batch if any line is invalid.
    ///   - holdsAtMost: the longest the batch is held for the producer's share of the CPU; past it the
    ///     answer is ``Outcome/tooFast(retryAfter:)``. Nil holds it as long as it takes (the
    ///     producer's socket then waits for its answers).
    func submit(_ body: [UInt8], producer: String, atomic: Bool = false, holdsAtMost: Duration? = nil) -> Outcome {
        if let sharing, let wait = sharing.admit(producer: producer, longest: holdsAtMost) {
            return .tooFast(retryAfter: Int(wait.components.seconds) + 1)
        }
        let cpuAtStart = ThreadCPUClock.now()
        var lines = ChangeLines.parse(body)
        let cost = lines.changes.count + lines.rejected.count
        let wait = buckets.withLock { table in
            table[producer, default: TokenBucket(clock: ContinuousClock(), rate: rate)].take(max(1, cost))
        }
        if let wait { return .tooFast(retryAfter: Int(wait.components.seconds) + 1) }
        for k in stride(from: lines.changes.count - 1, through: 0, by: -1) {
            if let problem = live.problem(with: lines.changes[k]) { lines.reject(at: k, problem) }
        }
        let current = live.dataset.version
        // The thread's own work; the wait for the log below costs it no CPU.
        let own = ThreadCPUClock.now() - cpuAtStart
        sharing?.charge(producer: producer, own: own, changes: lines.changes.count)
        if lines.changes.isEmpty || (atomic && !lines.rejected.isEmpty) {
            let status = lines.rejected.isEmpty ? 200 : 400
            return .answered(status: status, IngestAnswer(accepted: 0, rejected: lines.rejected, version: current))
        }
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<UInt64, ChangeLogError>?>(nil)
        live.log.append(lines.changes) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        switch result.withLock({ $0 })! {
        case .success(let version):
            let perSecond = sharing?.accepted(lines.changes.count, producer: producer)
            return .answered(
                status: 200,
                IngestAnswer(
                    accepted: lines.changes.count, rejected: lines.rejected, version: version,
                    acceptedPerSecond: perSecond))
        case .failure(let error):
            return .failed("the changes were not stored: \(error)")
        }
    }
}
