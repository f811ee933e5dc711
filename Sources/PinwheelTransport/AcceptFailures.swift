import CLibWebSockets
import Foundation
import Synchronization

/// What the process does when `accept` fails for want of descriptors (EMFILE, ENFILE), which the
/// connection cap (``DescriptorBudget``) makes rare but cannot rule out: the rest of the process may
/// use up the reserve.
///
/// lws 4.1.6 logs `accept: errno 24` and returns, leaving the connection in the listen queue, so the
/// next poll reports the listener readable at once: a hot loop that wrote 88 MiB of log in 8 s. The
/// process keeps one spare descriptor (/dev/null) for this. The first failure closes it, so lws's
/// next `accept` succeeds and the connection is refused at once (``WebSocketServer``'s admission
/// check sees ``isStarved``); each waiting connection is taken off the queue that way, and once the
/// queue is empty `accept` says EAGAIN and the loop sleeps. The spare is opened again on the next
/// service tick when a descriptor is free. A failure with no spare to give back waits 1 ms, so even
/// then the loop does not spin. Failures are logged at most once a second, with their count.
///
/// Process-wide, as descriptors are. Lws service threads (from lws's log emitter and callbacks).
enum AcceptFailures {
    private struct State {
        var spare: Int32 = -1
        var failures = 0
        var lastErrno: Int32 = 0
        var lastLogged: ContinuousClock.Instant?
    }

    private static let state = Mutex(State())
    private static let starved = Atomic<Bool>(false)

    /// Shortest time between two log lines about failed accepts.
    static let logInterval: Duration = .seconds(1)

    /// True while the spare is given up: new connections are refused until it is back.
    static var isStarved: Bool { starved.load(ordering: .relaxed) }

    /// Opens the spare descriptor if it is not held; clears ``isStarved`` when it could. Also writes
    /// the count of failures not logged yet once ``logInterval`` has passed. Cheap when nothing failed.
    static func rearm(now: ContinuousClock.Instant = .now) {
        state.withLock { s in
            guard s.spare < 0 || s.failures > 0 else { return }
            if s.spare < 0 { s.spare = open("/dev/null", O_RDONLY | O_CLOEXEC) }
            starved.store(s.spare < 0, ordering: .relaxed)
            logIfDue(&s, now: now)
        }
    }

    /// An `accept` failed with `code`: gives up the spare (or waits 1 ms when there is none) and
    /// counts the failure for the next log line.
    static func failed(errno code: Int32, now: ContinuousClock.Instant = .now) {
        let hadSpare = state.withLock { s in
            s.failures += 1
            s.lastErrno = code
            starved.store(true, ordering: .relaxed)
            let spare = s.spare
            s.spare = -1
            if spare >= 0 { close(spare) }
            logIfDue(&s, now: now)
            return spare >= 0
        }
        if !hadSpare { usleep(1000) }
    }

    private static func logIfDue(_ s: inout State, now: ContinuousClock.Instant) {
        guard s.failures > 0, s.lastLogged.map({ now - $0 >= logInterval }) ?? true else { return }
        let name = String(cString: strerror(s.lastErrno))
        let line =
            "accept failed \(s.failures) times since the last report (errno \(s.lastErrno): \(name)); "
            + "refusing new connections until a descriptor is free\n"
        lwsl_emit_stderr(Int32(LLL_ERR), line)
        s.failures = 0
        s.lastLogged = now
    }
}

/// Every line lws logs passes here (``LWSLog/install(levels:)``); lws's `accept: errno N` goes to
/// ``AcceptFailures`` instead of stderr. Non-capturing, so it converts to a C function pointer.
/// Whichever thread lws logs on.
func lwsLogLine(level: Int32, line: UnsafePointer<CChar>?) {
    guard let line else { return }
    let prefix = "accept: errno "
    if strncmp(line, prefix, prefix.utf8.count) == 0 {
        AcceptFailures.failed(errno: atoi(line + prefix.utf8.count))
        return
    }
    lwsl_emit_stderr(level, line)
}

/// lws's logging, process-wide.
enum LWSLog {
    /// Sets lws's log levels and routes its lines through ``lwsLogLine(level:line:)``. Errors are
    /// always on, so failed accepts are always seen (and counted rather than printed).
    static func install(levels: Int32) {
        shim_lws_set_log_emitter(levels | Int32(LLL_ERR), lwsLogLine)
    }
}
