import Foundation

/// How a compaction's thread asks Linux for a core. A compaction is a whole rebuild, seconds of CPU
/// that no viewer waits for, so it should take only what the server's other threads leave.
enum CompactionPriority: Equatable {
    /// With cores to spare: `SCHED_IDLE`, on this thread alone. The thread runs only on a core
    /// nothing else wants, and Linux places a woken thread on a core running it as on an idle one. At
    /// nice +5, with a second thread from the shared pool at the process's priority, compactions took
    /// turns on the cores from the workers, and viewers' first batch p99 was two to three times as
    /// long (see docs/performance.md, "Who waits for a core").
    case spareCoresOnly
    /// On a machine short of cores (``CoreShortage``), where a `SCHED_IDLE` compaction would hardly run
    /// and the delta under every query would grow: nice +5, as the workers then, with the shared pool's
    /// second thread for large zooms.
    case yielding

    /// Whether the build uses a second thread from the shared pool.
    var buildsConcurrently: Bool { self == .yielding }

    /// Applies to the calling thread (Linux keeps a policy and a nice value per thread); a failure
    /// leaves the thread as it was.
    func apply() {
        switch self {
        case .spareCoresOnly:
            var parameters = sched_param(sched_priority: 0)
            _ = sched_setscheduler(0, Self.schedIdle, &parameters)
        case .yielding:
            let which = __priority_which_t(PRIO_PROCESS.rawValue)
            errno = 0
            let current = getpriority(which, 0)
            guard errno == 0 else { return }
            _ = setpriority(which, 0, min(19, current + Workers.yieldingNiceness))
        }
    }

    /// `SCHED_IDLE` from <sched.h>, which Glibc's module map leaves out (it is behind `_GNU_SOURCE`).
    static let schedIdle: Int32 = 5
}
