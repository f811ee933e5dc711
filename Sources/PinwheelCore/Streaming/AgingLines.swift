/// Jobs in lines of different urgency, each line first in first out: the most urgent waiting job is
/// taken first, except that a job of a patient line that has waited its line's slack (it is overdue)
/// gets every other job taken until it is.
///
/// Under strict priority a steady stream of urgent jobs would hold a patient line back for good. Here a
/// patient job waits at most its slack, then every second job taken is the most overdue one, so with
/// `W` threads taking jobs of at most `d` it is taken within its slack plus
/// `2 · d / W` for itself and each overdue job ahead of it, plus `d` for a running job to finish,
/// whatever the urgent line holds; and however many jobs are overdue, the urgent line keeps at least
/// every other job taken.
public struct AgingLines<Job, Instant: InstantProtocol> {
    private struct Line {
        var jobs: [(job: Job, due: Instant)] = []
        var head = 0

        var count: Int { jobs.count - head }
        var first: (job: Job, due: Instant)? { head < jobs.count ? jobs[head] : nil }

        mutating func pop() -> Job {
            let job = jobs[head].job
            head += 1
            // Compact once the consumed prefix dominates, keeping appends amortised O(1).
            if head > 1024 && head * 2 > jobs.count {
                jobs.removeFirst(head)
                head = 0
            }
            return job
        }
    }

    /// Each line's slack, most urgent line first.
    public let slacks: [Instant.Duration]
    private var lines: [Line]
    /// Whether the last job taken was an overdue one taken ahead of a more urgent line.
    private var lastWasOverdue = false

    /// - Parameter slacks: each line's slack, most urgent line first: how long its jobs wait behind
    ///   the more urgent lines before they are overdue. The first line's is never used.
    public init(slacks: [Instant.Duration]) {
        precondition(!slacks.isEmpty, "at least one line")
        self.slacks = slacks
        lines = slacks.map { _ in Line() }
    }

    /// Jobs queued in all lines.
    public var count: Int { lines.reduce(0) { $0 + $1.count } }

    /// Queues a job behind those of its line.
    /// - Parameters:
    ///   - line: the index of its line in ``slacks``.
    ///   - at: when it arrived.
    public mutating func push(_ job: Job, line: Int, at: Instant) {
        lines[line].jobs.append((job, at.advanced(by: slacks[line])))
    }

    /// Takes the next job at `now`: the first of the most urgent line that has any, or, if the last
    /// job taken was not overdue, the first job of a less urgent line that is overdue (the longest
    /// overdue of them). Nil when no job waits.
    /// - Complexity: O(lines).
    public mutating func pop(at now: Instant) -> Job? {
        guard let urgent = lines.indices.first(where: { lines[$0].count > 0 }) else { return nil }
        var overdue: (line: Int, due: Instant)?
        for k in lines.indices where k > urgent {
            guard let first = lines[k].first, first.due <= now else { continue }
            if overdue == nil || first.due < overdue!.due { overdue = (k, first.due) }
        }
        if let overdue, !lastWasOverdue {
            lastWasOverdue = true
            return lines[overdue.line].pop()
        }
        lastWasOverdue = false
        return lines[urgent].pop()
    }

    /// Drops every queued job.
    public mutating func removeAll() {
        lines = slacks.map { _ in Line() }
        lastWasOverdue = false
    }
}
