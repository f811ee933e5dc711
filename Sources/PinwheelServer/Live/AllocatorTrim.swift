#if canImport(Glibc)
    import Glibc
#endif

/// When to hand the C allocator's free pages back to the kernel.
///
/// glibc gives each thread that allocates at once an arena of its own (up to 8 per core), and
/// returns an arena's free memory to the kernel only from its top: the holes that request bodies,
/// decoded changes, a compaction's build and retired index generations leave inside stay resident.
/// With the demo's 145k points, 500 movers at 200 changes/s took RSS from 144 MB to 316 MB, and it
/// stayed there after they stopped; `malloc_trim(0)`, which releases the free pages inside every
/// arena, brought it to 157 MB. So ``settle`` after a compaction (once sessions let go of the index
/// generation it replaced) the index thread trims, at most once every ``spacing``: a trim under
/// load is paid for in page faults when the pages are used again.
struct AllocatorTrim {
    /// Least time between two trims.
    static let spacing: Duration = .seconds(5)
    /// How long after a compaction the trim waits: the generation it replaced is freed by the next
    /// refresh once no session's turn uses it.
    static let settle: Duration = .seconds(1)

    private var due: ContinuousClock.Instant?
    private var last: ContinuousClock.Instant?

    /// A compaction was installed (or the index rebuilt) at `now`: its predecessor's memory is free soon.
    mutating func compacted(at now: ContinuousClock.Instant) { due = now + Self.settle }

    /// Whether to trim at `now`; when it says so, the trim counts as done.
    mutating func isDue(at now: ContinuousClock.Instant) -> Bool {
        guard let due, now >= due, last.map({ now - $0 >= Self.spacing }) ?? true else { return false }
        self.due = nil
        last = now
        return true
    }

    /// Releases the free pages of every arena. `malloc_trim` is not in Swift's Glibc module, so it is
    /// looked up by name; where it is missing nothing happens.
    /// - Returns: whether the allocator released any memory.
    @discardableResult
    static func trim() -> Bool {
        #if canImport(Glibc)
            typealias MallocTrim = @convention(c) (Int) -> Int32
            guard let symbol = dlsym(nil, "malloc_trim") else { return false }
            return unsafeBitCast(symbol, to: MallocTrim.self)(0) == 1
        #else
            return false
        #endif
    }
}
