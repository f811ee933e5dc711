import Foundation

/// The process's file descriptors as a budget: how many connections (WebSocket and HTTP together)
/// the server may hold so that the rest of the process always finds a descriptor.
///
/// Every accepted socket takes one descriptor, and so does everything else the process opens: its
/// log, the change log and its snapshots, NATS sockets, the /proc files read for metrics and by
/// libdispatch, the files lws opens to serve static files, lws's own event pipe and listener, the
/// libev loop. Connections are capped at the limit minus ``reserve(forLimit:)``; past the cap the
/// server refuses new connections at once instead of letting `accept` fail with EMFILE, which lws
/// 4.1.6 retries in a hot loop and after which libdispatch aborts the process.
public struct DescriptorBudget: Sendable, Equatable {
    /// The soft limit (RLIMIT_NOFILE) the process started with.
    public var startingSoftLimit: Int
    /// The soft limit now, after ``raisedToHardLimit()``.
    public var softLimit: Int
    /// The hard limit, the most the soft limit may be raised to without privileges.
    public var hardLimit: Int

    /// Descriptors kept out of the connections' reach.
    public var reserve: Int { Self.reserve(forLimit: softLimit) }

    /// Connections, WebSocket and HTTP together, the server may hold at once.
    public var connections: Int { max(1, softLimit - reserve) }

    /// Descriptors kept for everything but connections: a fixed 64 for the process's own files
    /// (an idle `pinwheel serve` holds 15: standard streams, the listener, lws's event pipe, libev's
    /// epoll, libdispatch's, the spare of ``AcceptFailures``; live data with `--movers` holds 16), plus a sixteenth of the limit for the files lws opens while it sends static
    /// files (one per HTTP connection in the middle of a file) and short-lived /proc reads.
    /// At the Debian default limit of 1,024 that is 128, leaving 896 connections.
    public static func reserve(forLimit limit: Int) -> Int {
        min(limit - 1, 64 + limit / 16)
    }

    /// The budget under the current limits, changing nothing.
    public static func current() -> DescriptorBudget {
        let limits = readLimits()
        return DescriptorBudget(startingSoftLimit: limits.soft, softLimit: limits.soft, hardLimit: limits.hard)
    }

    /// Raises the soft limit to the hard limit (capped at what the kernel allows a process,
    /// /proc/sys/fs/nr_open, when the hard limit is unlimited), and returns the budget under it.
    /// A refusal leaves the soft limit as it was. Call before creating a server: lws sizes its
    /// descriptor tables from the limit when its context is created.
    public static func raisedToHardLimit() -> DescriptorBudget {
        let before = readLimits()
        var wanted = rlimit()
        wanted.rlim_cur = rlim_t(before.hard)
        wanted.rlim_max = rlim_t(before.hardRaw)
        if before.hard > before.soft { _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &wanted) }
        let after = readLimits()
        return DescriptorBudget(startingSoftLimit: before.soft, softLimit: after.soft, hardLimit: after.hard)
    }

    private static func readLimits() -> (soft: Int, hard: Int, hardRaw: rlim_t) {
        var limits = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 else { return (1024, 1024, 1024) }
        let ceiling = kernelCeiling()
        // rlim_t.max is RLIM_INFINITY, whose C spelling does not import.
        func bounded(_ value: rlim_t) -> Int { value == rlim_t.max ? ceiling : Int(min(value, rlim_t(ceiling))) }
        return (bounded(limits.rlim_cur), bounded(limits.rlim_max), limits.rlim_max)
    }

    // The most descriptors the kernel gives one process (fs.nr_open, 1,048,576 by default).
    private static func kernelCeiling() -> Int {
        let text = try? String(contentsOfFile: "/proc/sys/fs/nr_open", encoding: .utf8)
        return text.flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 1 << 20
    }
}
