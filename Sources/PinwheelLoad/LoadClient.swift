import PinwheelCore
import PinwheelTransport

/// One simulated person's connection and figures. Owned by its `LoadGroup`, under the group's lock.
struct LoadClient {
    enum Phase: Equatable {
        /// Not connected yet; connects at `connectAt`.
        case waiting
        /// Handshake under way.
        case connecting
        /// Open, waiting for `hello`.
        case open
        /// Touring: sends a viewport each tick.
        case touring
        /// Gone: closed, or never connected.
        case finished
    }

    /// A viewport sent and not yet answered by its `done` (nor superseded by a later one).
    struct InFlight {
        var seq: Int
        var sentAt: ContinuousClock.Instant
        var sawBatch = false
    }

    let index: Int
    let connectAt: ContinuousClock.Instant
    var phase = Phase.waiting
    var connection: ConnectionID?
    var session = ""
    var tour: Tour?
    /// A still viewer's one view (`--still`): sent once, never moved from.
    var still: TourViewport?
    var nextTick: ContinuousClock.Instant
    var nextSeq = 1
    var inFlight: [InFlight] = []
    /// Encoded size of every feature the client holds, to price a naive server's full re-send.
    var featureBytes: [UInt64: Int] = [:]
    var heldBytes = 0
    /// The newest data version a batch brought.
    var dataVersion: UInt64 = 0
    /// The version the first batch brought: where the data stood when the client arrived.
    var firstVersion: UInt64?
    /// The seq of the last viewport answered by its `done`: changed data re-serves it, `done` again.
    var answeredSeq = 0

    var figures = ClientFigures()

    /// Filtered mode: the filter this client views through, and whether the server took it (its
    /// `hello` for the filter came).
    var filter: LoadFilters.Filter?
    var filterStage = FilterStage.none
    /// The probe viewer's never-seen filters (`--probes`): how many it set, and the one it waits for.
    var probe: Probe?

    enum FilterStage { case none, asked, set }

    struct Probe {
        var total: Int
        var period: Duration
        var sent = 0
        var waiting: (since: ContinuousClock.Instant, helloSeen: Bool)?
    }

    init(index: Int, connectAt: ContinuousClock.Instant) {
        self.index = index
        self.connectAt = connectAt
        self.nextTick = connectAt
    }

    /// Applies a scanned batch: latency of its viewport, what the client now holds, the counts.
    /// - Returns: the number of markers to acknowledge.
    /// - Parameters:
    ///   - keepsSamples: false for long-running bots, whose latency samples would only pile up.
    mutating func apply(
        _ scanned: MessageScanner, bytes: Int, at now: ContinuousClock.Instant, keepsSamples: Bool = true
    ) -> Int {
        let isFirst = firstVersion == nil
        if isFirst { firstVersion = scanned.version }
        if scanned.version > dataVersion {
            // The first batch only tells where the data stood when the client arrived.
            if !isFirst, keepsSamples {
                figures.newerData.append(ClientFigures.Arrival(from: dataVersion, version: scanned.version, at: now))
            }
            dataVersion = scanned.version
        }
        figures.batches += 1
        figures.bytes += bytes
        let markers = scanned.removed.count + scanned.features.count
        figures.markers += markers
        figures.features += scanned.features.count
        for id in scanned.removed {
            if let size = featureBytes.removeValue(forKey: id) { heldBytes -= size }
        }
        for feature in scanned.features {
            heldBytes += feature.bytes - (featureBytes.updateValue(feature.bytes, forKey: feature.id) ?? 0)
        }
        // Everything sent before this batch's viewport is superseded: the server serves the latest.
        while let first = inFlight.first, first.seq < scanned.seq {
            inFlight.removeFirst()
            figures.superseded += 1
        }
        if let first = inFlight.first, first.seq == scanned.seq {
            if !first.sawBatch {
                inFlight[0].sawBatch = true
                if keepsSamples { figures.firstBatchMicros.append(Self.micros(now - first.sentAt)) }
                // After the client's first answered view its filter's index is surely built: warm.
                if keepsSamples, filter != nil, answeredSeq > 0 {
                    figures.warmFirstBatchMicros.append(Self.micros(now - first.sentAt))
                }
            }
            if scanned.done {
                if keepsSamples { figures.doneMicros.append(Self.micros(now - first.sentAt)) }
                figures.answered += 1
                answeredSeq = scanned.seq
                inFlight.removeFirst()
                // A naive server would send every held feature again for this view, in one batch.
                figures.naiveBytes += Self.naiveBatchBytes(
                    seq: scanned.seq, batch: scanned.batch, featureBytes: heldBytes, features: featureBytes.count)
            }
        } else if scanned.done && scanned.seq != answeredSeq {
            // A done for a viewport this client never sent, or one it moved on from: a protocol error.
            // (The served viewport's seq comes again when changed data refreshes it.)
            figures.count(error: "done for unknown seq")
        }
        return markers
    }

    /// The size of one batch carrying `features` features of `featureBytes` bytes in all, and nothing else:
    /// what a server without diffs sends for each viewport.
    static func naiveBatchBytes(seq: Int, batch: Int, featureBytes: Int, features: Int) -> Int {
        var envelope = JSONWriter(capacity: 96)
        envelope.raw(#"{"type":"batch","seq":"#)
        envelope.integer(seq)
        envelope.raw(#","batch":"#)
        envelope.integer(batch)
        envelope.raw(#","remove":[],"add":[],"update":[],"done":true}"#)
        return envelope.bytes.count + featureBytes + max(0, features - 1)
    }

    static func micros(_ duration: Duration) -> UInt32 {
        let (seconds, attos) = duration.components
        let micros = seconds * 1_000_000 + attos / 1_000_000_000_000
        return UInt32(clamping: max(0, micros))
    }
}

/// One client's counts, for the report.
struct ClientFigures: Sendable, Codable {
    var connectMicros: UInt32?
    var viewportsSent = 0
    var answered = 0
    var superseded = 0
    var unanswered = 0
    var batches = 0
    var markers = 0
    /// Features added or updated (markers without the removes).
    var features = 0
    /// Payload bytes of batches received (after inflation).
    var bytes = 0
    /// What re-sending every held feature at each `done` would have cost.
    var naiveBytes = 0
    var presenceMessages = 0
    /// Sessions named in the latest presence message.
    var presenceSessions: [String] = []
    var closeCode: UInt16?
    var closedDuringRun = false
    var errors: [String: Int] = [:]
    var firstBatchMicros: [UInt32] = []
    var doneMicros: [UInt32] = []
    /// Each batch that brought newer data: the versions it brought, and when it arrived. Set against
    /// the producer's requests when the report is made (the producer may run in another process of the
    /// tool), each change of those versions is a staleness sample.
    var newerData: [Arrival] = []
    /// Filtered mode: first batches of viewports sent once the client's filter was in use.
    var warmFirstBatchMicros: [UInt32] = []
    /// The probe's never-seen filters: from `settings` to the first batch of the filtered view.
    var probeMicros: [UInt32] = []
    /// Points (features of count 1) received in batches and checked against the client's filter,
    /// and those that failed it.
    var pointsChecked = 0
    var scopeViolations = 0
    /// The first point received outside the filter: what it was, for the report.
    var firstViolation: String?
    /// Points the server counted under the client's filter (its `hello` after `settings`).
    var filteredPoints: Int?
    /// The canonical key of the client's filter.
    var filterKey: String?

    struct Arrival: Codable {
        /// The version the client had before.
        var from: UInt64
        var version: UInt64
        var at: ContinuousClock.Instant
    }

    mutating func count(error: String) {
        errors[error, default: 0] += 1
    }
}
