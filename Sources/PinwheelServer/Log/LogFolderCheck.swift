import Foundation
import PinwheelCore

#if canImport(Glibc)
    import Glibc
#endif

/// `pinwheel log check` and `pinwheel log repair`: what a file change log's folder holds, what a
/// start would do with it, and (asked on purpose) cutting it back to its intact part.
public struct LogFolderCheck: Sendable {
    /// How a folder stands.
    public enum Verdict: Sendable, Equatable {
        /// Nothing damaged.
        case intact
        /// Damage a start recovers from by itself without losing an acknowledged change (a torn tail,
        /// a damaged snapshot with an intact older one, damage the snapshot covers); it is reported.
        case recoverable
        /// A start refuses: keeping the intact part loses what the damage held (see ``plan``).
        case refused
    }

    public let folder: LogFolder
    /// The snapshot a start would use (nil: none intact).
    public let snapshot: LogFolder.SnapshotFile?
    public let plan: LogFolder.Plan
    public let verdict: Verdict

    /// Reads every file of `directory` and judges it.
    public init(directory: String) throws(ChangeLogError) {
        folder = try LogFolder.inspect(directory: directory)
        snapshot = folder.snapshots.last { $0.problem == nil }
        var plan = folder.plan(after: snapshot?.version ?? 0)
        if snapshot == nil, let newest = folder.snapshots.last, plan.refusal == nil {
            // The segments hold every change from version 1: repair moves only the snapshots aside.
            plan.refusal = .corrupt(path: "\(directory)/\(newest.name)", offset: 0, reason: "every snapshot is damaged")
        }
        self.plan = plan
        let damaged =
            folder.snapshots.contains { $0.problem != nil }
            || folder.segments.contains { $0.scan.tail != nil || $0.scan.items.count != $0.scan.records.count }
        verdict = plan.refusal != nil ? .refused : damaged ? .recoverable : .intact
    }

    /// What the folder holds and what a start would do, for a person.
    public var report: String {
        var lines = ["data folder \(folder.directory)", "snapshots:"]
        if folder.snapshots.isEmpty { lines.append("  none") }
        for s in folder.snapshots {
            lines.append(
                "  \(s.name)  version \(s.version)  \(s.bytes) bytes  \(s.problem.map { "DAMAGED: \($0)" } ?? "intact")"
            )
        }
        lines.append("segments:")
        if folder.segments.isEmpty { lines.append("  none") }
        for s in folder.segments {
            let versions = s.versions.map { "versions \($0.lowerBound)...\($0.upperBound)" } ?? "no intact record"
            lines.append("  \(s.name)  \(s.bytes) bytes  \(s.records) records  \(versions)")
            for item in s.scan.items {
                if case .damaged(let offset, let end) = item {
                    lines.append("    DAMAGED at byte \(offset): \(end - offset) bytes that are no intact record")
                }
            }
            if let tail = s.scan.tail {
                let what = tail.torn ? "an interrupted write" : "a record whose checksum fails"
                lines.append("    DAMAGED at byte \(tail.offset): the last \(tail.bytes) bytes are \(what)")
            }
        }
        let from = snapshot.map { "the snapshot at version \($0.version)" } ?? "the initial data (--data)"
        if let refusal = plan.refusal {
            lines.append("a start refuses: \(refusal)")
        } else {
            lines.append("a start uses \(from) and replays up to version \(plan.last)")
            if let cut = plan.cut {
                lines.append(
                    "  and cuts \(cut.bytes) bytes of an interrupted write off \(cut.segment) at byte \(cut.offset)")
            }
        }
        switch verdict {
        case .intact: lines.append("verdict: intact")
        case .recoverable: lines.append("verdict: damaged, and a start recovers without losing an acknowledged change")
        case .refused: lines.append("verdict: damaged; `pinwheel log repair` shows what keeping the intact part loses")
        }
        return lines.joined(separator: "\n")
    }

    // MARK: Repair

    /// A file or the end of one that repair moves out of the way, into the folder's `damaged-<time>/`.
    public struct Removal: Sendable, Equatable {
        public var name: String
        /// Where the cut starts; 0 moves the whole file.
        public var offset: Int
        public var bytes: Int
        /// The versions of intact records in what is moved (changes a start cannot reach any more).
        public var versions: ClosedRange<UInt64>?
        public var changes: UInt64
    }

    /// What repair moves out: damaged snapshots, and every record from the first damage that breaks
    /// the versions on; nothing when a start needs no repair.
    public var removals: [Removal] {
        var out: [Removal] = []
        for s in folder.snapshots where s.problem != nil {
            out.append(Removal(name: s.name, offset: 0, bytes: s.bytes, versions: nil, changes: 0))
        }
        if plan.refusedAt == nil, let cut = plan.cut {
            out.append(Removal(name: cut.segment, offset: cut.offset, bytes: cut.bytes, versions: nil, changes: 0))
        }
        guard let (k, offset) = plan.refusedAt else { return out }
        for (j, s) in folder.segments.enumerated() where j >= k {
            let from = j == k ? offset : 0
            guard s.bytes > from else { continue }
            let lost = s.scan.records.filter { $0.offset >= from }
            let versions = lost.first.map { $0.first...lost.last!.last }
            let changes = lost.reduce(UInt64(0)) { $0 + $1.last - $1.first + 1 }
            out.append(Removal(name: s.name, offset: from, bytes: s.bytes - from, versions: versions, changes: changes))
        }
        return out
    }

    /// What repair keeps and loses, for a person.
    public var repairReport: String {
        let removals = removals
        guard !removals.isEmpty else { return "nothing to repair: a start loses no acknowledged change" }
        var lines: [String] = []
        let lostChanges = removals.reduce(UInt64(0)) { $0 + $1.changes }
        let kept = keptLast
        lines.append(
            "repair keeps "
                + (snapshot.map { "the snapshot at version \($0.version)" }
                    ?? "no snapshot (a start begins from --data)")
                + " and the changes up to version \(kept)")
        lines.append("and moves into \(folder.directory)/damaged-<time>/:")
        for r in removals {
            let what =
                r.offset == 0
                ? "all of \(r.name) (\(r.bytes) bytes)" : "\(r.name) from byte \(r.offset) (\(r.bytes) bytes)"
            let versions =
                r.versions.map { ", holding intact records of versions \($0.lowerBound)...\($0.upperBound)" } ?? ""
            lines.append("  \(what)\(versions)")
        }
        lines.append(
            "changes lost: \(lostChanges) intact ones after version \(kept), and whatever the damaged bytes held")
        if snapshot == nil {
            lines.append(
                "without a snapshot a start replays from --data: it must be the data this folder was started with")
        }
        return lines.joined(separator: "\n")
    }

    /// The last version a start has after repair.
    public var keptLast: UInt64 {
        guard let (k, offset) = plan.refusedAt else { return plan.last }
        let version = snapshot?.version ?? 0
        var last = version
        for (j, s) in folder.segments.enumerated() where j <= k {
            for r in s.scan.records where (j < k || r.offset < offset) && r.last > last { last = r.last }
        }
        return last
    }

    /// Moves what ``removals`` lists into `damaged-<time>/` and cuts the segments; returns that folder.
    public func repair(now: Date = Date()) throws(ChangeLogError) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd-HHmmss"
        let aside = "\(folder.directory)/damaged-\(formatter.string(from: now))"
        do {
            try FileManager.default.createDirectory(atPath: aside, withIntermediateDirectories: true)
        } catch {
            throw .io(path: aside, operation: "mkdir", errno: EACCES)
        }
        for r in removals {
            let path = "\(folder.directory)/\(r.name)"
            if r.offset == 0 {
                guard rename(path, "\(aside)/\(r.name)") == 0 else {
                    throw .io(path: path, operation: "rename", errno: errno)
                }
                continue
            }
            let bytes = try LogFolder.read(path)
            let copy = "\(aside)/\(r.name).from-byte-\(r.offset)"
            guard FileManager.default.createFile(atPath: copy, contents: Data(bytes[r.offset...])) else {
                throw .io(path: copy, operation: "write", errno: errno)
            }
            guard Glibc.truncate(path, off_t(r.offset)) == 0 else {
                throw .io(path: path, operation: "truncate", errno: errno)
            }
        }
        sync()
        return aside
    }
}
