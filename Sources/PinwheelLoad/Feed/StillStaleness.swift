import PinwheelCore

import struct Histogram.Histogram

/// How stale still viewers' maps were, change by change: the viewers the tool keeps for the purpose
/// (`--still`) set one viewport and never move, as a dashboard does, so each change the producer sent
/// whose point lands in (or leaves) a still viewer's view must reach it through the server's refresh
/// alone. A change is shown once the viewer received a batch of its version or a newer one; its
/// staleness is that batch's arrival less the moment just before the request carrying the change was
/// sent. A change whose point the producer had not placed before is known to leave nothing when it
/// moves or deletes it, so only where it lands counts.
struct StillStaleness {
    /// A change the producer sent: where its point was before (if the producer placed it) and where it
    /// is after (nil for a delete).
    struct Placed: Sendable {
        var before: Coordinate?
        var after: Coordinate?
    }

    /// One request the server accepted whole: its changes in the source's order from `firstChange`
    /// hold versions from `firstVersion` on.
    struct Request: Sendable {
        var firstChange: Int
        var firstVersion: UInt64
        var count: Int
        var sentAt: ContinuousClock.Instant
    }

    /// One still viewer: its view, the version its first batch brought, and each later arrival of newer
    /// data.
    struct Viewer {
        var bbox: BBox
        var startVersion: UInt64
        var arrivals: [ClientFigures.Arrival]
    }

    /// Change → arrival at a still viewer, microseconds.
    private(set) var staleness = LoadReportBuilder.latencyHistogram()
    /// The longest a still viewer went without an update while a change in its view waited: from the
    /// later of the change's send and the viewer's previous update to the update that showed it.
    private(set) var longestGap: Duration = .zero
    /// Changes in a still viewer's view sent before `deliveredBy` that no batch brought.
    private(set) var undelivered = 0

    /// Sets every change of the accepted requests against every viewer.
    /// - Parameter deliveredBy: changes sent after this are not counted as undelivered when missing
    ///   (the run ended before a refresh could bring them): the tour's end, the still viewers having
    ///   had the drain to show what came before it.
    init(placed: [Placed], requests: [Request], viewers: [Viewer], deliveredBy: ContinuousClock.Instant) {
        for viewer in viewers {
            for request in requests {
                for k in 0..<request.count {
                    let change = placed[request.firstChange + k]
                    let inView =
                        (change.after.map { viewer.bbox.contains(lat: $0.lat, lon: $0.lon) } ?? false)
                        || (change.before.map { viewer.bbox.contains(lat: $0.lat, lon: $0.lon) } ?? false)
                    guard inView else { continue }
                    let version = request.firstVersion + UInt64(k)
                    guard version > viewer.startVersion else { continue }
                    count(version: version, sentAt: request.sentAt, at: viewer, deliveredBy: deliveredBy)
                }
            }
        }
    }

    private mutating func count(
        version: UInt64, sentAt: ContinuousClock.Instant, at viewer: Viewer, deliveredBy: ContinuousClock.Instant
    ) {
        // Arrivals come in version order: the first that holds the change.
        var lo = 0
        var hi = viewer.arrivals.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if viewer.arrivals[mid].version >= version { hi = mid } else { lo = mid + 1 }
        }
        guard lo < viewer.arrivals.count else {
            if sentAt < deliveredBy { undelivered += 1 }
            return
        }
        let shown = viewer.arrivals[lo].at
        _ = staleness.record(UInt64(LoadClient.micros(sentAt.duration(to: shown))))
        let waitingSince = lo > 0 ? max(sentAt, viewer.arrivals[lo - 1].at) : sentAt
        longestGap = max(longestGap, waitingSince.duration(to: shown))
    }

    /// The view of still viewer `k` of a run: alternately at zoom 12 near a city, where changes are
    /// single markers, and at zoom 5 over a region of clusters around one, a city further on each time.
    static func view(_ k: Int, width: Int, height: Int) -> TourViewport {
        let city = TourCities.all[(k / 2 * 7) % TourCities.all.count]
        return TourViewport(
            x: Mercator.x(lon: city.lon), y: Mercator.y(lat: city.lat), zoom: k % 2 == 0 ? 12 : 5, width: width,
            height: height)
    }
}
