import Foundation
import Logging
import PinwheelCore
import Synchronization

/// The clusterers sessions share now. Any thread reads them; the index thread replaces them at each
/// refresh (``IndexPublisher``), and the first session asking for an algorithm not built yet builds
/// it on its own thread (a worker).
final class ServedClusterers: Sendable {
    /// The algorithm sessions get unless they ask for another; built at start.
    let algorithm: Algorithm
    private let current: Mutex<Clusterers>
    /// When each algorithm was last asked for: while data changes, only those in use are rebuilt.
    private let lastAsked = Mutex<[Algorithm: ContinuousClock.Instant]>([:])
    /// Whether ``lastAsked`` is kept (only data that changes needs it).
    private let tracksUse: Bool
    /// Held while an algorithm is built on first use.
    private let firstBuilds = Mutex(())
    /// The points an algorithm built on first use is built over; nil: the default algorithm's.
    private let points: @Sendable () -> Dataset?
    private let logger: Logger

    /// - Parameters:
    ///   - clusterers: built at start.
    ///   - algorithm: the configured algorithm, which `clusterers` holds.
    ///   - points: the points now when they change, else nil.
    init(
        _ clusterers: Clusterers, algorithm: Algorithm, points: (@Sendable () -> Dataset)?, logger: Logger
    ) {
        current = Mutex(clusterers)
        self.algorithm = algorithm
        tracksUse = points != nil
        self.points = { points?() }
        self.logger = logger
    }

    /// The clusterers now.
    var now: Clusterers { current.withLock { $0 } }

    /// Index thread: replaces some algorithms' clusterers.
    func replace(_ clusterers: [Algorithm: any Clusterer]) {
        current.withLock { $0 = $0.replacing(clusterers) }
    }

    /// Index thread: replaces every clusterer.
    func replaceAll(with next: Clusterers) {
        current.withLock { $0 = next }
    }

    /// The algorithms sessions asked for in the last minute, and the configured one.
    func inUse(at now: ContinuousClock.Instant) -> Set<Algorithm> {
        lastAsked.withLock { asked in
            Set(asked.filter { now - $0.value < .seconds(60) }.keys).union([algorithm])
        }
    }

    /// The shared clusterer of an algorithm now; the first session asking for one not built yet
    /// waits while it is built.
    func clusterer(for algorithm: Algorithm) -> any Clusterer {
        if tracksUse { lastAsked.withLock { $0[algorithm] = .now } }
        if let built = now.built(algorithm) { return built }
        return builtOnFirstUse(algorithm)
    }

    /// Builds an algorithm's clusterer over the points now, once, however many sessions ask at the
    /// same time; with live data the compactions keep it up to the changes from then on.
    private func builtOnFirstUse(_ algorithm: Algorithm) -> any Clusterer {
        firstBuilds.withLock { _ in
            let clusterers = now
            if let built = clusterers.built(algorithm) { return built }
            let started = ContinuousClock.now
            let fallback = clusterers.clusterer(for: self.algorithm)
            do {
                let points = points() ?? fallback.dataset
                let built = try clusterers.build(algorithm, over: points)
                replace([algorithm: built])
                logger.info(
                    "\(algorithm.rawValue) built on first use: \(points.count) points in \(ContinuousClock.now - started)"
                )
                return built
            } catch {
                logger.error("building \(algorithm.rawValue) failed: \(error); serving \(self.algorithm.rawValue)")
                return fallback
            }
        }
    }
}
