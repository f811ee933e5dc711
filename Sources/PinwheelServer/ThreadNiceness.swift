import Foundation

/// Linux keeps a nice value per thread: a thread whose value is higher than its process's yields the
/// cores to the process's other threads when the machine has too few, and runs as before otherwise.
enum ThreadNiceness {
    /// What threads that can wait add with live data (the workers, compactions): at 5 a thread gets
    /// about a third of the share of one at 0 when both wait for a core, so the index thread, which
    /// every viewer's changes wait for, goes first.
    static let yielding: Int32 = 5

    /// Adds `amount` to the calling thread's nice value (`who` 0 is the calling thread on Linux); a
    /// failure leaves the thread as it was.
    static func raise(by amount: Int32) {
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        errno = 0
        let current = getpriority(which, 0)
        guard errno == 0 else { return }
        _ = setpriority(which, 0, min(19, current + amount))
    }
}
