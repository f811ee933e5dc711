import Dispatch
import Foundation

/// How a compaction's thread asks Linux for a core. A compaction is a whole rebuild, seconds of CPU
/// that no viewer waits for, so it should take only what the server's other threads leave.
enum CompactionPriority: Equatable {
    /// With cores to spare: `SCHED_IDLE`, on this thread alone. The thread runs only on a core
    /// nothing else wants, and Linux places a woken thread on a core running it as on an idle one. At
    /// nice +5, with a second thread from the shared pool at the process's priority, compactions took
    /// turns on the cores from the workers, and viewers' first batch p99 was two to three times as
    /// long (docs/benchmarks/2026-11-28-who-waits-for-a-core.md).
    case spareCoresOnly
    /// On a machine short of cores (``CoreShortage``), where a `SCHED_IDLE` compaction would hardly run
    /// and the delta under every query would grow: nice +5, as the workers then, with the shared pool's
    /// second thread for large zooms.
    case yielding

    /// Whether the build uses a second thread from the shared pool.
    var buildsConcurrently: Bool { self == .yielding }

    /// The priority for a compaction starting now. Idle cores only when the machine is known to have
    /// some to spare, and when this process may take a thread out of `SCHED_IDLE` again (root, or an
    /// `RLIMIT_NICE` that allows it): a compaction running so when the cores run out is made to yield
    /// instead (``apply(toThread:)``), which Linux refuses without that privilege.
    static func starting(coresShort: Bool, judged: Bool) -> CompactionPriority {
        judged && !coresShort && mayComeBack ? .spareCoresOnly : .yielding
    }

    /// Whether a thread of this process may lower its nice value once raised, or leave `SCHED_IDLE`:
    /// Linux asks the same of both. Found by trying on a thread of its own.
    static let mayComeBack: Bool = {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var cameBack = false
        let thread = Thread {
            let which = __priority_which_t(PRIO_PROCESS.rawValue)
            let own = getpriority(which, 0)
            cameBack = own < 19 && setpriority(which, 0, own + 1) == 0 && setpriority(which, 0, own) == 0
            done.signal()
        }
        thread.start()
        done.wait()
        return cameBack
    }()

    /// The calling thread's id, for ``apply(toThread:)``; nil where /proc is missing. Read from /proc
    /// because Glibc's module map leaves out `gettid` (behind `_GNU_SOURCE`, like `SCHED_IDLE`).
    static func currentThread() -> pid_t? {
        var path = [UInt8](repeating: 0, count: 64)
        let length = path.withUnsafeMutableBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { readlink("/proc/thread-self", $0.baseAddress!, $0.count) }
        }
        guard length > 0 else { return nil }
        // "PID/task/TID"
        return pid_t(String(decoding: path.prefix(length), as: UTF8.self).split(separator: "/").last ?? "")
    }

    /// Applies to a thread of this process, the calling one by default (Linux keeps a policy and a
    /// nice value per thread); a failure leaves the thread as it was.
    func apply(toThread thread: pid_t = 0) {
        var parameters = sched_param(sched_priority: 0)
        switch self {
        case .spareCoresOnly:
            _ = sched_setscheduler(thread, Self.schedIdle, &parameters)
        case .yielding:
            guard sched_setscheduler(thread, SCHED_OTHER, &parameters) == 0 else { return }
            let which = __priority_which_t(PRIO_PROCESS.rawValue)
            errno = 0
            // The process's own nice value: its main thread's, whose id is the process's.
            let own = getpriority(which, id_t(getpid()))
            guard errno == 0 else { return }
            _ = setpriority(which, id_t(thread), min(19, own + Workers.yieldingNiceness))
        }
    }

    /// `SCHED_IDLE` from <sched.h>, which Glibc's module map leaves out (it is behind `_GNU_SOURCE`).
    static let schedIdle: Int32 = 5
}
