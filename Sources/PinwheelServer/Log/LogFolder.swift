import Foundation
import PinwheelCore

#if canImport(Glibc)
    import Glibc
#endif

/// The files of a ``FileChangeLog``'s folder and what they hold, read without changing anything:
/// what `open`, `pinwheel log check` and `pinwheel log repair` all decide from.
public struct LogFolder: Sendable {
    public let directory: String
    /// Snapshot files, oldest first.
    public private(set) var snapshots: [SnapshotFile] = []
    /// Segment files, oldest first.
    public private(set) var segments: [SegmentFile] = []

    /// One `snapshot-<version>.bin`.
    public struct SnapshotFile: Sendable, Equatable {
        public var version: UInt64
        public var name: String
        public var bytes: Int
        /// Why it cannot be used, nil when it is intact.
        public var problem: String?
    }

    /// One `changes-<first version>.log`.
    public struct SegmentFile: Sendable, Equatable {
        public var first: UInt64
        public var name: String
        var scan: SegmentScan
        public var bytes: Int { scan.size }
        public var records: Int { scan.records.count }
        /// The versions of its intact records, nil when it has none.
        public var versions: ClosedRange<UInt64>? {
            guard let a = scan.records.first, let b = scan.records.last, a.first <= b.last else { return nil }
            return a.first...b.last
        }
    }

    /// Reads the folder's file names, every segment, and (with `allSnapshots`) every snapshot;
    /// otherwise snapshots are read only by ``newestIntactSnapshot()``.
    init(directory: String, allSnapshots: Bool) throws(ChangeLogError) {
        self.directory = directory
        for (version, name) in try Self.files(in: directory, prefix: "snapshot-", suffix: ".bin") {
            var file = SnapshotFile(version: version, name: name, bytes: 0, problem: nil)
            if allSnapshots {
                let bytes = try Self.read("\(directory)/\(name)")
                file.bytes = bytes.count
                file.problem = Self.snapshotProblem(bytes, version: version)
            }
            snapshots.append(file)
        }
        for (first, name) in try Self.files(in: directory, prefix: "changes-", suffix: ".log") {
            segments.append(
                SegmentFile(first: first, name: name, scan: SegmentScan(try Self.read("\(directory)/\(name)"))))
        }
    }

    /// Reads every file and judges it: for operators (`pinwheel log check`).
    public static func inspect(directory: String) throws(ChangeLogError) -> LogFolder {
        try LogFolder(directory: directory, allSnapshots: true)
    }

    // MARK: Snapshots

    static let snapshotMagic: [UInt8] = Array("PWSN".utf8)

    /// The newest intact snapshot, and each newer one passed over with why.
    /// - Throws: ``ChangeLogError/corrupt(path:offset:reason:)`` when there are snapshots but none is
    ///   intact: starting from the initial data would drop every change they held.
    func newestIntactSnapshot() throws(ChangeLogError) -> (LogSnapshot?, skipped: [(name: String, problem: String)]) {
        var skipped: [(name: String, problem: String)] = []
        for file in snapshots.reversed() {
            let bytes = try Self.read("\(directory)/\(file.name)")
            if let problem = Self.snapshotProblem(bytes, version: file.version) {
                skipped.append((file.name, problem))
                continue
            }
            return (LogSnapshot(version: file.version, bytes: Array(bytes[24...])), skipped)
        }
        guard let newest = skipped.first else { return (nil, []) }
        throw .corrupt(
            path: "\(directory)/\(newest.name)", offset: 0,
            reason: "every snapshot is damaged (this one: \(newest.problem)); `pinwheel log check` lists them")
    }

    /// Why the bytes of `snapshot-<version>.bin` are not a snapshot, nil when they are.
    static func snapshotProblem(_ bytes: [UInt8], version: UInt64) -> String? {
        guard bytes.count >= 24 else { return "\(bytes.count) bytes, shorter than a snapshot's 24-byte header" }
        guard Array(bytes[0..<4]) == snapshotMagic else { return "no PWSN mark at its start" }
        var r = ByteReader(bytes[4..<24])
        let stored = (try? r.u64()) ?? 0
        let length = (try? r.u64()) ?? 0
        let crc = (try? r.u32()) ?? 0
        guard stored == version else { return "it says version \(stored), its name \(version)" }
        guard length == bytes.count - 24 else {
            return "it says \(length) bytes follow its header, \(bytes.count - 24) do"
        }
        guard CRC32.checksum(bytes[24...]) == crc else { return "its checksum does not match its bytes" }
        return nil
    }

    // MARK: What a start would replay

    /// A stretch of bytes that holds no intact record.
    public struct Damage: Sendable, Equatable {
        public var segment: String
        public var offset: Int
        public var bytes: Int
    }

    /// What starting after `version` would do: the records to replay, a torn tail to cut, damage
    /// that loses nothing, or the reason it must not start.
    public struct Plan: Sendable {
        /// Records to replay, by segment index, in order.
        var replay: [(segment: Int, records: [SegmentScan.Record])] = []
        /// The torn tail of the last segment: never acknowledged, cut at the start.
        public var cut: Damage?
        /// Damage in bytes no change after `version` needs (they are covered by the snapshot).
        public var harmless: [Damage] = []
        /// The version of the last change the log holds (`version` when it holds none after it).
        public var last: UInt64
        /// Set when starting would lose acknowledged changes: the first such damage and what it is.
        public var refusal: ChangeLogError?
        /// Where the intact part ends when refused: the segment index and offset to cut at.
        var refusedAt: (segment: Int, offset: Int)?
    }

    /// Walks the segments in version order from `version`: every change after it must be in an intact
    /// record, each record starting where the one before ended.
    public func plan(after version: UInt64) -> Plan {
        var plan = Plan(last: version)
        var expected = version + 1
        // The last segment that holds any bytes: only its tail may be torn by a crash.
        let lastWithBytes = segments.lastIndex { $0.scan.size > 0 } ?? -1
        // Damage waiting for the next intact record to tell whether it held needed changes.
        var pending: (damage: Damage, segment: Int, what: String)?

        func refuse(_ path: String, _ offset: Int, _ reason: String, cutAt: (Int, Int)) {
            plan.refusal = .corrupt(path: path, offset: offset, reason: reason)
            plan.refusedAt = cutAt
        }

        /// Judges pending damage now that the next intact record starts at `next` (nil: none does).
        func judge(next: (first: UInt64, segment: String, offset: Int)?) -> Bool {
            guard let (damage, k, what) = pending else { return true }
            pending = nil
            if let next, next.first <= expected {
                plan.harmless.append(damage)
                return true
            }
            let after =
                next.map {
                    "the next intact record, at byte \($0.offset) of \($0.segment), starts at version \($0.first)"
                }
                ?? "no intact record follows"
            let lost =
                next.map { "versions \(expected)...\($0.first - 1) cannot be read" } ?? "whatever it held is lost"
            refuse(
                "\(directory)/\(damage.segment)", damage.offset,
                "\(damage.bytes) bytes of \(what); the last intact change before them is version \(expected - 1), "
                    + "\(after): \(lost). `pinwheel log repair --data-dir \(directory)` shows what keeping the intact part would lose",
                cutAt: (k, damage.offset))
            return false
        }

        for (k, segment) in segments.enumerated() {
            var replay: [SegmentScan.Record] = []
            for item in segment.scan.items {
                switch item {
                case .damaged(let offset, let end):
                    pending = (Damage(segment: segment.name, offset: offset, bytes: end - offset), k, "damage")
                case .record(let r):
                    guard judge(next: (r.first, segment.name, r.offset)) else { return plan }
                    if r.last < expected && expected == version + 1 { continue }  // the snapshot holds it
                    guard r.first <= expected else {
                        refuse(
                            "\(directory)/\(segment.name)", r.offset,
                            "version \(r.first), expected \(expected): versions \(expected)...\(r.first - 1) are missing "
                                + "(the last intact change before is version \(expected - 1))",
                            cutAt: (k, r.offset))
                        return plan
                    }
                    guard r.first == expected || expected == version + 1 else {
                        refuse(
                            "\(directory)/\(segment.name)", r.offset,
                            "version \(r.first), expected \(expected): a record repeats versions already read",
                            cutAt: (k, r.offset))
                        return plan
                    }
                    replay.append(r)
                    expected = r.last + 1
                }
            }
            if !replay.isEmpty { plan.replay.append((k, replay)) }
            if let tail = segment.scan.tail {
                let damage = Damage(segment: segment.name, offset: tail.offset, bytes: tail.bytes)
                if k == lastWithBytes && tail.torn {
                    guard judge(next: nil) else { return plan }
                    plan.cut = damage
                } else {
                    pending = (damage, k, tail.torn ? "an incomplete record" : "a record whose checksum fails")
                }
            }
        }
        _ = judge(next: nil)
        plan.last = expected - 1
        return plan
    }

    // MARK: Files

    /// Files named `<prefix><20 digits><suffix>`, by their number.
    static func files(in directory: String, prefix: String, suffix: String) throws(ChangeLogError) -> [(UInt64, String)]
    {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw .io(path: directory, operation: "list", errno: EIO)
        }
        return names.compactMap { name -> (UInt64, String)? in
            guard name.hasPrefix(prefix), name.hasSuffix(suffix) else { return nil }
            let digits = name.dropFirst(prefix.count).dropLast(suffix.count)
            guard digits.count == 20, let n = UInt64(digits) else { return nil }
            return (n, name)
        }.sorted { $0.0 < $1.0 }
    }

    static func read(_ path: String) throws(ChangeLogError) -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .io(path: path, operation: "read", errno: errno)
        }
        return [UInt8](data)
    }

    static func padded(_ n: UInt64) -> String {
        let digits = String(n)
        return String(repeating: "0", count: max(0, 20 - digits.count)) + digits
    }
}
