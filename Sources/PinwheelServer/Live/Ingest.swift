import Dispatch
import Foundation
import PinwheelCore
import Synchronization

/// Producers' changes on their way into the log: the token, the rate, the lines, then one append
/// whose answer comes once the accepted changes are durable, through a completion the log calls: no
/// thread waits for the fsync.
///
/// A request is applied line by line: its valid lines are appended together as one record (all of
/// them or, if the log fails, none), and the invalid ones are listed with their reasons. With
/// `atomic`, a request with any invalid line is refused whole and nothing of it is applied.
///
/// Retries are safe: a request may carry an idempotency key, and one with a key already applied
/// within the duplicate window is answered with the first one's version and not applied again (by
/// the replicated log itself, whichever node the retry reaches; by an in-memory window for the file
/// log). A request is never appended after its `deadline`, nor after the process stalled while
/// holding it: its producer has given its answer up and may have sent newer changes since.
final class Ingest: Sendable {
    /// What one batch of changes came to.
    enum Outcome: Equatable, Sendable {
        /// Appended (or nothing to append); `status` 200, or 400 when no line was valid or an atomic
        /// request had invalid lines.
        case answered(status: Int, IngestAnswer)
        /// Over the producer's rate: try again after this many seconds.
        case tooFast(retryAfter: Int)
        /// The log could not make the changes durable; none of them was applied.
        case failed(String)
        /// Not applied, with this status and reason: an invalid idempotency key (400), a request with
        /// the same key still being applied (409), a request past its deadline (503).
        case refused(status: Int, String)
    }

    /// Longest idempotency key, in bytes.
    static let maxKeyBytes = 128
    /// How long a request may take from its arrival to its record leaving for the log, by default.
    static let defaultDeadline = Duration.seconds(10)

    let live: LiveData
    /// Changes per second each producer may send.
    let rate: Double
    /// Ingest's share of the CPU while viewers are connected; nil takes changes as fast as they come.
    let sharing: IngestSharing?
    private let token: [UInt8]?
    /// Tokens limited to one tenant, and the property that names a point's tenant.
    private let tenantTokens: [[UInt8]: String]
    let tenantColumn: String
    private let buckets = Mutex<[String: TokenBucket<ContinuousClock>]>([:])
    /// How long after its arrival a request may still be appended.
    let deadline: Duration
    private let stalls: StallWatch
    /// Keys for a log that does not recognise them itself.
    private let keys: Mutex<IdempotencyWindow>
    /// Requests dropped past their deadline, and retries answered as duplicates.
    private let counts = Mutex((expired: 0, duplicates: 0))

    /// - Parameters:
    ///   - token: the token that may change every point; nil when only `tenantTokens` are taken.
    ///   - tenantTokens: tokens that may change only their tenant's points, token → tenant.
    init(
        live: LiveData, token: String?, tenantTokens: [String: String] = [:], tenantColumn: String = "tenant",
        rate: Double, sharing: IngestSharing? = nil,
        deadline: Duration = Ingest.defaultDeadline, onStall: @escaping @Sendable (Duration) -> Void = { _ in }
    ) {
        self.live = live
        self.token = token.map { Array($0.utf8) }
        self.tenantTokens = Dictionary(uniqueKeysWithValues: tenantTokens.map { (Array($0.key.utf8), $0.value) })
        self.tenantColumn = tenantColumn
        self.rate = rate
        self.sharing = sharing
        self.deadline = deadline
        stalls = StallWatch(onStall: onStall)
        keys = Mutex(IdempotencyWindow(window: .seconds(120), capacity: 100_000))
    }

    /// Requests dropped past their deadline and retries answered as duplicates, since start.
    var tallies: (expired: Int, duplicates: Int) { counts.withLock { $0 } }

    /// Prometheus text: requests dropped past their deadline, retries answered as duplicates.
    var metricsText: String {
        let (expired, duplicates) = tallies
        return """
            # HELP pinwheel_ingest_expired_total Change requests dropped, not applied, past their deadline or after this process stalled.
            # TYPE pinwheel_ingest_expired_total counter
            pinwheel_ingest_expired_total \(expired)
            # HELP pinwheel_ingest_duplicates_total Change requests whose idempotency key was applied already.
            # TYPE pinwheel_ingest_duplicates_total counter
            pinwheel_ingest_duplicates_total \(duplicates)
            # HELP pinwheel_changes_stale_total Changes dropped because their point held a newer observation time (replays at start included).
            # TYPE pinwheel_changes_stale_total counter
            pinwheel_changes_stale_total \(live.staleTotal)

            """
    }

    /// Why `key` is not a valid idempotency key, nil when it is: 1 to 128 visible ASCII characters.
    static func problem(withKey key: String) -> String? {
        let bytes = Array(key.utf8)
        guard (1...maxKeyBytes).contains(bytes.count), bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            return
                "an idempotency key must be 1 to \(maxKeyBytes) visible ASCII characters (no spaces), got \(bytes.count) bytes"
        }
        return nil
    }

    /// Why a request received at `received` must not be appended any more, nil when it may be.
    func expiry(received: ContinuousClock.Instant) -> String? {
        if let stall = stalls.stall(holding: received) {
            return "this node stopped running for \(Self.seconds(stall)) while it held the request"
        }
        let age = ContinuousClock.now - received
        guard age > deadline else { return nil }
        return "its deadline passed: \(Self.seconds(age)) since it arrived, over the \(Self.seconds(deadline)) limit"
    }

    private static func seconds(_ d: Duration) -> String {
        let tenths = Int((d / .seconds(1) * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) s"
    }

    /// What a producer may change.
    enum Grant: Equatable, Sendable {
        /// Every point (`--ingest-token-file`).
        case all
        /// Only the points of this tenant (`--producer-tokens`).
        case tenant(String)

        /// The tenant a producer is limited to; nil for ``all``.
        var tenant: String? {
            if case .tenant(let t) = self { return t }
            return nil
        }
    }

    /// Whether an `Authorization` header carries a token.
    func authorizes(_ header: String?) -> Bool { grant(for: header) != nil }

    /// What the token of an `Authorization` header lets its producer change; nil for no valid token.
    /// Every token is compared in time that does not depend on where the first difference is.
    func grant(for header: String?) -> Grant? {
        guard let header, header.hasPrefix("Bearer ") else { return nil }
        let given = Array(header.utf8.dropFirst("Bearer ".utf8.count))
        if let token, Self.same(given, token) { return .all }
        var found: Grant?
        for (candidate, tenant) in tenantTokens where Self.same(given, candidate) { found = .tenant(tenant) }
        return found
    }

    private static func same(_ given: [UInt8], _ token: [UInt8]) -> Bool {
        var difference = UInt8(given.count == token.count ? 0 : 1)
        for i in 0..<token.count {
            difference |= token[i] ^ (i < given.count ? given[i] : 0)
        }
        return difference == 0
    }

    /// Checks and appends a batch, and waits for its outcome: for callers with a thread of their own
    /// to spare (tests). See ``submit(_:producer:atomic:key:received:holdsAtMost:done:)``.
    func submit(
        _ body: [UInt8], producer: String, atomic: Bool = false, key: String? = nil,
        received: ContinuousClock.Instant = .now, holdsAtMost: Duration? = nil
    ) -> Outcome {
        let answered = DispatchSemaphore(value: 0)
        let result = Mutex<Outcome?>(nil)
        submit(body, producer: producer, atomic: atomic, key: key, received: received, holdsAtMost: holdsAtMost) {
            outcome in
            result.withLock { $0 = outcome }
            answered.signal()
        }
        answered.wait()
        return result.withLock { $0 }!
    }

    /// Checks and appends a batch; `done` gets the outcome once the log has the accepted changes
    /// durably (from the log's thread), or at once when nothing is appended. The calling thread does
    /// the checks and may be held for the producer's share of the CPU (`holdsAtMost`), but never waits
    /// for the log. Any thread but the log's.
    /// - Parameters:
    ///   - body: NDJSON, one change per line.
    ///   - producer: whose rate the changes count against.
    ///   - atomic: refuse the whole batch if any line is invalid.
    ///   - key: the producer's idempotency key, if any (checked with ``problem(withKey:)`` first).
    ///   - tenant: the producer's tenant when its token is limited to one: a change to a point of
    ///     another tenant is refused on its line.
    ///   - received: when the request arrived; it is not appended after ``deadline`` from then.
    ///   - holdsAtMost: the longest the batch is held for the producer's share of the CPU; past it the
    ///     answer is ``Outcome/tooFast(retryAfter:)``. Nil holds it as long as it takes (the
    ///     producer's socket then waits for its answers).
    ///   - done: called exactly once with the outcome.
    func submit(
        _ body: [UInt8], producer: String, atomic: Bool = false, key: String? = nil, tenant: String? = nil,
        received: ContinuousClock.Instant = .now, holdsAtMost: Duration? = nil,
        done: @escaping @Sendable (Outcome) -> Void
    ) {
        if let key, let problem = Self.problem(withKey: key) { return done(.refused(status: 400, problem)) }
        if let sharing, let wait = sharing.admit(producer: producer, longest: holdsAtMost) {
            return done(.tooFast(retryAfter: Int(wait.components.seconds) + 1))
        }
        let cpuAtStart = ThreadCPUClock.now()
        var lines = ChangeLines.parse(body)
        let cost = lines.changes.count + lines.rejected.count
        let wait = buckets.withLock { table in
            table[producer, default: TokenBucket(clock: ContinuousClock(), rate: rate)].take(max(1, cost))
        }
        if let wait { return done(.tooFast(retryAfter: Int(wait.components.seconds) + 1)) }
        for k in stride(from: lines.changes.count - 1, through: 0, by: -1) {
            if let problem = live.problem(with: lines.changes[k])
                ?? tenant.flatMap({ scopeProblem(lines.changes[k], $0) })
            {
                lines.reject(at: k, problem)
            }
        }
        let current = live.dataset.version
        // The thread's own work; the log's append after it costs this thread nothing.
        let own = ThreadCPUClock.now() - cpuAtStart
        sharing?.charge(producer: producer, own: own, changes: lines.changes.count)
        let (changes, rejected) = (lines.changes, lines.rejected)
        if changes.isEmpty || (atomic && !rejected.isEmpty) {
            let status = rejected.isEmpty ? 200 : 400
            return done(.answered(status: status, IngestAnswer(accepted: 0, rejected: rejected, version: current)))
        }
        let request = AppendRequest(key: key) { [self] in expiry(received: received) }
        let finish: @Sendable (Result<AppendOutcome, ChangeLogError>) -> Void = { [self] outcome in
            done(answer(outcome, changes: changes.count, rejected: rejected, producer: producer))
        }
        if let keyed = live.log as? KeyedChangeLog {
            keyed.append(changes, request: request, done: finish)
        } else if let key {
            let started = appendRemembering(changes, key: key, request: request, done: finish)
            if !started {
                done(
                    .refused(
                        status: 409,
                        "a request with idempotency key \(key) is being applied now; nothing of this one was applied, retry once it is answered"
                    ))
            }
        } else {
            appendOnce(changes, request: request, done: finish)
        }
    }

    /// The outcome of an append of `changes` changes, `rejected` lines left out. The log's thread.
    private func answer(
        _ outcome: Result<AppendOutcome, ChangeLogError>, changes: Int, rejected: [ChangeLines.Rejection],
        producer: String
    ) -> Outcome {
        let answer = { [sharing, live] (version: UInt64, duplicate: Bool) -> Outcome in
            let perSecond = duplicate ? nil : sharing?.accepted(changes, producer: producer)
            // The record was applied before its answer: its stale changes are known (a duplicate's are
            // the first request's, not told again).
            let count = UInt64(changes)
            let stale = duplicate || version < count ? 0 : live.staleCount(in: (version - count + 1)...version)
            return .answered(
                status: 200,
                IngestAnswer(
                    accepted: changes, rejected: rejected, version: version, duplicate: duplicate,
                    acceptedPerSecond: perSecond, stale: stale))
        }
        switch outcome {
        case .success(.appended(let version)):
            return answer(version, false)
        case .success(.duplicate(let version)):
            counts.withLock { $0.duplicates += 1 }
            return answer(version, true)
        case .success(.dropped(let why)):
            counts.withLock { $0.expired += 1 }
            return .refused(status: 503, "the changes were not stored: \(why); nothing of it was applied")
        case .failure(let error):
            return .failed("the changes were not stored: \(error)")
        }
    }

    /// Appends to a log that knows no keys, unless the request expired first.
    private func appendOnce(
        _ changes: [Change], request: AppendRequest,
        done: @escaping @Sendable (Result<AppendOutcome, ChangeLogError>) -> Void
    ) {
        if let why = request.expired() { return done(.success(.dropped(why))) }
        live.log.append(changes) { done($0.map { .appended($0) }) }
    }

    /// Appends to a log that knows no keys, remembering `key` in this process: a retry within the
    /// window gets the first answer's version.
    /// - Returns: false, calling nothing, while a request with the same key is still being applied.
    private func appendRemembering(
        _ changes: [Change], key: String, request: AppendRequest,
        done: @escaping @Sendable (Result<AppendOutcome, ChangeLogError>) -> Void
    ) -> Bool {
        switch keys.withLock({ $0.begin(key, at: .now) }) {
        case .done(let version):
            done(.success(.duplicate(version)))
        case .inFlight:
            return false
        case .new:
            appendOnce(changes, request: request) { [self] outcome in
                let version: UInt64? = if case .success(.appended(let v)) = outcome { v } else { nil }
                keys.withLock { $0.finish(key, version: version, at: .now) }
                done(outcome)
            }
        }
        return true
    }
}
