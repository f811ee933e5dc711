import Dispatch

/// Splits CPU-bound build work over the machine's cores (2 here). Every caller divides its work into
/// parts that touch disjoint memory and combines them in a fixed order, so results never depend on
/// thread timing.
enum Parallel {
    /// Work worth a thread of its own: below this many items, threads cost more than they save.
    static let minimumItems = 65_536

    /// Runs `body(0) ... body(count - 1)` and returns when all are done: concurrently, or one after
    /// another on the calling thread, with the same result either way.
    static func run(_ count: Int, concurrently: Bool = true, _ body: (Int) -> Void) {
        if count <= 1 || !concurrently {
            for part in 0..<max(count, 0) { body(part) }
            return
        }
        withoutActuallyEscaping(body) { body in
            let work = UncheckedSendable(body)
            DispatchQueue.concurrentPerform(iterations: count) { work.value($0) }
        }
    }
}

/// Hands memory a caller has divided into disjoint parts to `Parallel.run`'s threads.
struct UncheckedSendable<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
