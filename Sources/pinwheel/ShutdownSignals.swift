import Dispatch
import Foundation
import Logging
import PinwheelServer
import Synchronization

/// SIGINT and SIGTERM for `serve`, taken from the first line of the command on, so that no moment
/// of the start leaves them to their default action (which ends the process without closing the
/// change log or the sessions).
///
/// While the data loads and the index builds there is nothing to close: a signal ends the process
/// at once. From ``starting(_:)`` the server exists but may not listen yet: a signal is held, and
/// carried out by ``running()``. From then on the first SIGTERM drains when `--drain` asks for it, and
/// SIGINT or a second signal stops the server at once.
final class ShutdownSignals: Sendable {
    private enum Phase {
        case loading
        case starting(Server, held: Int32?)
        case running(Server)
    }

    private let phase = Mutex(Phase.loading)
    private let queue = DispatchQueue(label: "pinwheel.signals")
    private let drainStarted = Atomic<Bool>(false)
    private let drain: Double
    private let logger: Logger
    private nonisolated(unsafe) var sources: [any DispatchSourceSignal] = []

    /// Takes SIGINT and SIGTERM over from now on.
    /// - Parameter drain: seconds the first SIGTERM drains before stopping (0: stop at once).
    init(drain: Double, logger: Logger) {
        self.drain = drain
        self.logger = logger
        // A signal handled by a Dispatch source must not also take its default action. Ignoring it is
        // not enough: libdispatch reads it through a signalfd, which sees only signals kept pending,
        // and Linux drops an ignored signal at once unless the thread it is sent to blocks it. So it is
        // blocked here, on the main thread before any other thread exists, and every thread made later
        // inherits the mask (seen: a SIGTERM right after start-up, now and then, lost without a trace).
        var both = sigset_t()
        sigemptyset(&both)
        sigaddset(&both, SIGINT)
        sigaddset(&both, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &both, nil)
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        sources = [SIGINT, SIGTERM].map { signo in
            let source = DispatchSource.makeSignalSource(signal: signo, queue: queue)
            source.setEventHandler { @Sendable [weak self] in self?.received(signo) }
            source.resume()
            return source
        }
    }

    /// The server exists and is about to start: a signal from now on stops it, once it runs.
    func starting(_ server: Server) {
        phase.withLock { $0 = .starting(server, held: nil) }
    }

    /// The server runs: a signal that came while it started is carried out now.
    func running() {
        let held = phase.withLock { phase -> Int32? in
            guard case .starting(let server, let held) = phase else { return nil }
            phase = .running(server)
            return held
        }
        if let held { queue.async { self.received(held) } }
    }

    /// Stops taking the signals.
    func cancel() {
        for source in sources { source.cancel() }
    }

    /// Signal queue only.
    private func received(_ signo: Int32) {
        let server = phase.withLock { phase -> Server?? in
            switch phase {
            case .loading: return .none
            case .starting(let server, _):
                phase = .starting(server, held: signo)
                return .some(nil)
            case .running(let server): return .some(server)
            }
        }
        guard let server else {
            logger.info("signal \(signo) while loading: exiting")
            exit(0)
        }
        guard let server else { return }
        // The first SIGTERM drains when asked to; SIGINT or a second signal stops at once.
        if signo == SIGTERM && drain > 0 && !drainStarted.exchange(true, ordering: .acquiringAndReleasing) {
            logger.info(
                "signal \(signo): draining for \(drain) s (/healthz answers 503), then closing every session with 1001")
            server.drain()
            queue.asyncAfter(deadline: .now() + drain) { @Sendable in server.stop() }
            return
        }
        logger.info("signal \(signo): closing every session with 1001")
        server.stop()
    }
}
