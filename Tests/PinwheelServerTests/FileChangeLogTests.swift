import Foundation
import PinwheelCore
import Synchronization
import Testing

@testable import PinwheelServer

/// The embedded change log on a real file system: what was acknowledged comes back after a reopen,
/// in order, whatever a crash left at the end of the last segment.
@Suite("File change log")
struct FileChangeLogTests {
    /// A fresh directory, removed when the test ends.
    final class Directory {
        let path = NSTemporaryDirectory() + "pinwheel-log-\(UUID().uuidString)"
        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    /// Everything `open` replays, in order.
    final class Replayed: @unchecked Sendable {
        let records = Mutex<[LoggedChanges]>([])
        var changes: [Change] { records.withLock { $0.flatMap(\.changes) } }
        var firsts: [UInt64] { records.withLock { $0.map(\.first) } }
        func add(_ r: LoggedChanges) { records.withLock { $0.append(r) } }
    }

    static func change(_ k: Int) -> Change {
        k % 7 == 3
            ? .delete(.name("p\(k - 1)"))
            : .upsert(
                .name("p\(k)"), lat: Double(k % 90), lon: Double(k % 180),
                properties: k % 2 == 0 ? ["k": .string("\(k)")] : [:])
    }

    /// Appends and waits for the answer.
    static func appendAndWait(_ log: FileChangeLog, _ changes: [Change]) throws -> UInt64 {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<Result<UInt64, ChangeLogError>?>(nil)
        log.append(changes) { r in
            result.withLock { $0 = r }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Opens the log in `dir` and collects what it replays.
    static func reopen(_ dir: Directory, after version: UInt64 = 0) throws -> (FileChangeLog, Replayed, UInt64) {
        let log = try FileChangeLog(directory: dir.path)
        let replayed = Replayed()
        let last = try log.open(after: version) { replayed.add($0) }
        return (log, replayed, last)
    }

    @Test("appends come back after a reopen, in order, with their versions")
    func reopenReplays() throws {
        let dir = Directory()
        let (log, _, start) = try Self.reopen(dir)
        #expect(start == 0)
        var expected: [Change] = []
        for k in 0..<20 {
            let batch = (0..<(k % 4 + 1)).map { Self.change(k * 10 + $0) }
            let version = try Self.appendAndWait(log, batch)
            expected += batch
            #expect(version == UInt64(expected.count))
        }
        log.close()
        let (again, replayed, last) = try Self.reopen(dir)
        #expect(last == UInt64(expected.count))
        #expect(replayed.changes == expected)
        #expect(try Self.appendAndWait(again, [Self.change(999)]) == last + 1)
        again.close()
    }

    @Test("open after a version delivers only later changes, splitting a record that straddles it")
    func openAfter() throws {
        let dir = Directory()
        let (log, _, _) = try Self.reopen(dir)
        _ = try Self.appendAndWait(log, (0..<5).map(Self.change))
        _ = try Self.appendAndWait(log, (5..<10).map(Self.change))
        log.close()
        let (again, replayed, last) = try Self.reopen(dir, after: 3)
        #expect(last == 10)
        #expect(replayed.changes == (3..<10).map(Self.change))
        #expect(replayed.firsts == [4, 6])
        again.close()
    }

    @Test("a record torn by a crash is cut off at open; everything before it stays, appends go on")
    func tornTail() throws {
        let dir = Directory()
        let (log, _, _) = try Self.reopen(dir)
        let kept = (0..<6).map(Self.change)
        _ = try Self.appendAndWait(log, kept)
        _ = try Self.appendAndWait(log, (6..<9).map(Self.change))
        log.close()
        let segment = try #require(
            try FileManager.default.contentsOfDirectory(atPath: dir.path).first { $0.hasPrefix("changes-") })
        let whole = try Data(contentsOf: URL(fileURLWithPath: "\(dir.path)/\(segment)"))
        let firstRecordEnd = 16 + ChangeCodec.encode(kept).count
        // Every byte of the torn record's header and the start of its payload, then every fifth byte:
        // each cut costs several fsyncs, which the other suites running beside this one feel.
        let cuts =
            Array(firstRecordEnd..<min(whole.count, firstRecordEnd + 24))
            + Array(stride(from: firstRecordEnd + 24, to: whole.count, by: 5))
        for cut in cuts {
            let copy = Directory()
            try FileManager.default.createDirectory(atPath: copy.path, withIntermediateDirectories: true)
            try whole.prefix(cut).write(to: URL(fileURLWithPath: "\(copy.path)/\(segment)"))
            let (reopened, replayed, last) = try Self.reopen(copy)
            #expect(replayed.changes == kept, "cut at \(cut)")
            #expect(last == 6 && reopened.truncatedBytes == cut - firstRecordEnd)
            #expect(try Self.appendAndWait(reopened, [Self.change(50)]) == 7)
            reopened.close()
            let (_, after, _) = try Self.reopen(copy)
            #expect(after.changes == kept + [Self.change(50)])
        }
    }

    @Test("a damaged record before the end is refused: dropping it would lose acknowledged changes")
    func damageInTheMiddle() throws {
        let dir = Directory()
        let (log, _, _) = try Self.reopen(dir)
        _ = try Self.appendAndWait(log, (0..<6).map(Self.change))
        log.close()
        // A second segment makes the first one's records no longer the tail.
        let (second, _, _) = try Self.reopen(dir)
        _ = try Self.appendAndWait(second, [Self.change(7)])
        second.close()
        let first = try #require(
            try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("changes-") }.sorted()
                .first)
        let url = URL(fileURLWithPath: "\(dir.path)/\(first)")
        var bytes = try Data(contentsOf: url)
        bytes[20] ^= 0xFF
        try bytes.write(to: url)
        #expect(throws: ChangeLogError.self) { _ = try Self.reopen(dir) }
    }

    @Test("appends queued while a commit runs share the next fsync; versions are gap-free; apply precedes the answer")
    func groupCommit() throws {
        let dir = Directory()
        let log = try FileChangeLog(directory: dir.path)
        let applied = Atomic<UInt64>(0)
        let queued = Atomic<Int>(0)
        let threads = 8
        _ = try log.open(after: 0) { record in
            // The first commit waits until every thread has queued an append, as a slow disk would
            // make them: those then go out together.
            if record.first == 1 {
                let deadline = ContinuousClock.now + .seconds(10)
                while queued.load(ordering: .acquiring) < threads && ContinuousClock.now < deadline {
                    Thread.sleep(forTimeInterval: 0.001)
                }
            }
            applied.store(record.last, ordering: .releasing)
        }
        let answers = Mutex<[(UInt64, Int)]>([])
        let early = Atomic<Int>(0)
        let finished = DispatchGroup()
        for t in 0..<threads {
            finished.enter()
            // Threads of their own: blocking Dispatch's shared pool would slow the other suites.
            Thread {
                for k in 0..<20 {
                    let size = (t + k) % 5 + 1
                    let changes = (0..<size).map { Self.change(t * 1000 + k * 10 + $0) }
                    let done = DispatchSemaphore(value: 0)
                    let version = Mutex<UInt64>(0)
                    if k == 0 { queued.add(1, ordering: .releasing) }
                    log.append(changes) { result in
                        version.withLock { $0 = (try? result.get()) ?? 0 }
                        done.signal()
                    }
                    done.wait()
                    let last = version.withLock { $0 }
                    if applied.load(ordering: .acquiring) < last { early.add(1, ordering: .relaxed) }
                    answers.withLock { $0.append((last, size)) }
                }
                finished.leave()
            }.start()
        }
        finished.wait()
        log.close()
        let all = answers.withLock { $0 }.sorted { $0.0 < $1.0 }
        var next: UInt64 = 1
        for (last, size) in all {
            #expect(last == next + UInt64(size) - 1)
            next = last + 1
        }
        #expect(all.count == threads * 20)
        #expect(early.load(ordering: .relaxed) == 0)
        #expect(log.fsyncCount <= threads * 20 - (threads - 2), "appends waiting together did not share an fsync")
    }

    @Test("snapshots: the newest comes back, a damaged newest falls back to the one before, old segments go")
    func snapshots() throws {
        let dir = Directory()
        let (log, _, _) = try Self.reopen(dir)
        try log.saveSnapshot(LogSnapshot(version: 0, bytes: [1, 2, 3]))
        _ = try Self.appendAndWait(log, (0..<4).map(Self.change))
        try log.saveSnapshot(LogSnapshot(version: 4, bytes: [4, 5]))
        _ = try Self.appendAndWait(log, (4..<6).map(Self.change))
        try log.saveSnapshot(LogSnapshot(version: 6, bytes: [6]))
        _ = try Self.appendAndWait(log, (6..<8).map(Self.change))
        log.close()
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
        #expect(names.filter { $0.hasPrefix("snapshot-") }.count == FileChangeLog.keptSnapshots)
        let (again, replayed, last) = try Self.reopen(dir, after: 6)
        #expect(try again.latestSnapshot() == LogSnapshot(version: 6, bytes: [6]))
        #expect(last == 8 && replayed.changes == (6..<8).map(Self.change))
        again.close()
        // The newest snapshot damaged: the previous one and the changes after it are all still there.
        let newest = "\(dir.path)/snapshot-\(String(repeating: "0", count: 19))6.bin"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: newest))
        bytes[bytes.count - 1] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: newest))
        let (fallback, fromFour, _) = try Self.reopen(dir, after: 4)
        #expect(try fallback.latestSnapshot() == LogSnapshot(version: 4, bytes: [4, 5]))
        #expect(fromFour.changes == (4..<8).map(Self.change))
        fallback.close()
    }

    // MARK: Snapshots racing appends

    /// The changes in version order as the log applied them: what a snapshot is taken from.
    final class Applied: @unchecked Sendable {
        let changes = Mutex<[Change]>([])
        func add(_ r: LoggedChanges) {
            changes.withLock {
                precondition(UInt64($0.count) + 1 == r.first, "applied out of order")
                $0 += r.changes
            }
        }
    }

    @Test("snapshots racing appends never leave a folder that loses an acknowledged version (30 rounds)")
    func snapshotsRacingAppends() throws {
        let dir = Directory()
        var acknowledged: [UInt64: [Change]] = [:]
        for round in 0..<30 {
            let log = try FileChangeLog(directory: dir.path)
            let applied = Applied()
            let snapshot = try log.latestSnapshot()
            let start = try snapshot.map { s in Array(try ChangeCodec.decode(s.bytes[...])) } ?? []
            applied.changes.withLock { $0 = start }
            _ = try log.open(after: snapshot?.version ?? 0) { applied.add($0) }
            // What the reopened folder holds must be every acknowledged change, in version order.
            let all = applied.changes.withLock { $0 }
            for (last, changes) in acknowledged {
                let first = Int(last) - changes.count
                #expect(first >= 0 && Int(last) <= all.count, "round \(round): version \(last) lost")
                if first >= 0 && Int(last) <= all.count { #expect(Array(all[first..<Int(last)]) == changes) }
            }
            let answers = Mutex<[UInt64: [Change]]>([:])
            let writers = DispatchGroup()
            for t in 0..<3 {
                writers.enter()
                Thread {
                    for k in 0..<40 {
                        let changes = (0..<((t + k) % 3 + 1)).map { Self.change(round * 1000 + t * 100 + k * 3 + $0) }
                        if let version = try? Self.appendAndWait(log, changes) {
                            answers.withLock { $0[version] = changes }
                        }
                    }
                    writers.leave()
                }.start()
            }
            // Snapshots as fast as they can go, each of the changes applied so far.
            let snapshotter = Thread {
                while writers.wait(timeout: .now()) == .timedOut {
                    let changes = applied.changes.withLock { $0 }
                    try? log.saveSnapshot(
                        LogSnapshot(version: UInt64(changes.count), bytes: ChangeCodec.encode(changes)))
                }
            }
            snapshotter.start()
            writers.wait()
            log.close()
            acknowledged.merge(answers.withLock { $0 }) { a, _ in a }
        }
        #expect(acknowledged.count == 30 * 3 * 40)
    }

    // MARK: Recovery that never guesses

    /// Writes records of 3 changes each (`count` of them) into a fresh log in `dir`, closes it.
    static func fill(_ dir: Directory, records count: Int, from k: Int = 0) throws -> [Change] {
        let (log, _, _) = try Self.reopen(dir)
        var all: [Change] = []
        for r in 0..<count {
            let changes = (0..<3).map { Self.change(k + r * 3 + $0) }
            _ = try Self.appendAndWait(log, changes)
            all += changes
        }
        log.close()
        return all
    }

    /// Where each record `fill` writes starts in its segment, and the segment's size.
    static func recordOffsets(records count: Int, from k: Int = 0) -> (starts: [Int], size: Int) {
        var starts: [Int] = []
        var offset = 0
        for r in 0..<count {
            starts.append(offset)
            offset += 16 + ChangeCodec.encode((0..<3).map { Self.change(k + r * 3 + $0) }).count
        }
        return (starts, offset)
    }

    static func segments(_ dir: Directory) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix("changes-") }.sorted()
            .filter { (try? Data(contentsOf: URL(fileURLWithPath: "\(dir.path)/\($0)")).count) ?? 0 > 0 }
    }

    static func flip(_ path: String, at offset: Int) throws {
        let url = URL(fileURLWithPath: path)
        var bytes = try Data(contentsOf: url)
        bytes[offset] ^= 0x10
        try bytes.write(to: url)
    }

    /// The error opening `dir` after `version` throws, nil when it opens.
    static func refusal(_ dir: Directory, after version: UInt64 = 0) -> ChangeLogError? {
        do throws(ChangeLogError) {
            let log = try FileChangeLog(directory: dir.path)
            _ = try log.open(after: version) { _ in }
            log.close()
            return nil
        } catch { return error }
    }

    @Test("a flipped bit in any record but the torn tail refuses to start, naming the file, offset and versions")
    func flippedRecordRefuses() throws {
        let dir = Directory()
        _ = try Self.fill(dir, records: 30)
        let segment = try #require(try Self.segments(dir).last)
        let (starts, size) = Self.recordOffsets(records: 30)
        // Record 5 of 30, then the last record's payload, then its length field: none is a torn write.
        for (record, offset) in [(4, starts[4] + 20), (29, size - 3), (29, starts[29] + 1)] {
            let copy = Directory()
            try FileManager.default.copyItem(atPath: dir.path, toPath: copy.path)
            try Self.flip("\(copy.path)/\(segment)", at: offset)
            let error = try #require(Self.refusal(copy), "flip at \(offset) was not refused")
            guard case .corrupt(let file, let at, let reason) = error else {
                Issue.record("flip at \(offset): \(error)")
                continue
            }
            #expect(file == "\(copy.path)/\(segment)")
            #expect(at == starts[record])
            #expect(reason.contains("the last intact change before them is version \(record * 3)"), "\(reason)")
            if record < 29 { #expect(reason.contains("starts at version \(record * 3 + 4)"), "\(reason)") }
            // Unchanged: a refusal cuts nothing.
            #expect(try Data(contentsOf: URL(fileURLWithPath: "\(copy.path)/\(segment)")).count == size)
        }
    }

    @Test("bytes cut off the last record are a torn write: cut, and reported with the last version kept")
    func tornTailIsReported() throws {
        let dir = Directory()
        _ = try Self.fill(dir, records: 10)
        let segment = try #require(try Self.segments(dir).last)
        let path = "\(dir.path)/\(segment)"
        let (starts, size) = Self.recordOffsets(records: 10)
        try Data(contentsOf: URL(fileURLWithPath: path)).prefix(size - 7).write(to: URL(fileURLWithPath: path))
        let warnings = Mutex<[String]>([])
        let log = try FileChangeLog(directory: dir.path) { note in warnings.withLock { $0.append(note) } }
        let last = try log.open(after: 0) { _ in }
        log.close()
        #expect(last == 27)
        let cut = try #require(log.recovery.cut)
        #expect(
            cut
                == FileChangeLog.TornTail(
                    path: path, offset: starts[9], bytes: size - 7 - starts[9], lastVersionKept: 27))
        #expect(warnings.withLock { $0 } == [cut.description])
    }

    @Test("a gap between segments refuses to start, naming the missing versions")
    func missingSegmentRefuses() throws {
        let dir = Directory()
        _ = try Self.fill(dir, records: 2)
        _ = try Self.fill(dir, records: 2, from: 100)
        _ = try Self.fill(dir, records: 2, from: 200)
        let names = try Self.segments(dir)
        #expect(names.count == 3)
        try FileManager.default.removeItem(atPath: "\(dir.path)/\(names[1])")
        let error = try #require(Self.refusal(dir))
        #expect(
            error
                == .corrupt(
                    path: "\(dir.path)/\(names[2])", offset: 0,
                    reason:
                        "version 13, expected 7: versions 7...12 are missing (the last intact change before is version 6)"
                ))
    }

    @Test("damage in records the snapshot holds is reported and passed over; the start loses nothing")
    func damageUnderTheSnapshot() throws {
        let dir = Directory()
        let first = try Self.fill(dir, records: 4)
        let (log, _, _) = try Self.reopen(dir)
        try log.saveSnapshot(LogSnapshot(version: 12, bytes: [1]))
        _ = try Self.appendAndWait(log, [Self.change(500)])
        log.close()
        #expect(first.count == 12)
        let oldest = try #require(try Self.segments(dir).first)
        try Self.flip("\(dir.path)/\(oldest)", at: 20)
        let (again, replayed, last) = try Self.reopen(dir, after: 12)
        again.close()
        #expect(last == 13 && replayed.changes == [Self.change(500)])
        #expect(again.recovery.harmless.map(\.segment) == [oldest])
        // Without the snapshot, the same damage refuses.
        let copy = Directory()
        try FileManager.default.copyItem(atPath: dir.path, toPath: copy.path)
        #expect(Self.refusal(copy, after: 0) != nil)
    }

    @Test("a damaged newest snapshot is reported with its reason; every snapshot damaged refuses")
    func snapshotFallbackIsReported() throws {
        let dir = Directory()
        let (log, _, _) = try Self.reopen(dir)
        try log.saveSnapshot(LogSnapshot(version: 0, bytes: [1, 2, 3]))
        _ = try Self.appendAndWait(log, [Self.change(1)])
        try log.saveSnapshot(LogSnapshot(version: 1, bytes: [4]))
        log.close()
        let newest = "\(dir.path)/snapshot-\(String(repeating: "0", count: 19))1.bin"
        try Self.flip(newest, at: 24)
        let warnings = Mutex<[String]>([])
        let reopened = try FileChangeLog(directory: dir.path) { note in warnings.withLock { $0.append(note) } }
        #expect(try reopened.latestSnapshot() == LogSnapshot(version: 0, bytes: [1, 2, 3]))
        #expect(
            warnings.withLock { $0 } == [
                "snapshot \(newest) is damaged (its checksum does not match its bytes); starting from the snapshot at version 0 instead"
            ])
        try Self.flip("\(dir.path)/snapshot-\(String(repeating: "0", count: 20)).bin", at: 0)
        #expect(throws: ChangeLogError.self) { _ = try FileChangeLog(directory: dir.path).latestSnapshot() }
    }

    // MARK: check and repair

    @Test("check tells intact, recoverable and refused folders apart; repair keeps the intact part and the log opens")
    func checkAndRepair() throws {
        let dir = Directory()
        _ = try Self.fill(dir, records: 10)
        #expect(try LogFolderCheck(directory: dir.path).verdict == .intact)
        let segment = try #require(try Self.segments(dir).last)
        let path = "\(dir.path)/\(segment)"
        let (starts, size) = Self.recordOffsets(records: 10)
        let whole = try Data(contentsOf: URL(fileURLWithPath: path))
        try whole.prefix(size - 5).write(to: URL(fileURLWithPath: path))
        #expect(try LogFolderCheck(directory: dir.path).verdict == .recoverable)
        try whole.write(to: URL(fileURLWithPath: path))
        try Self.flip(path, at: starts[6] + 18)
        let check = try LogFolderCheck(directory: dir.path)
        #expect(check.verdict == .refused)
        #expect(check.report.contains("DAMAGED at byte \(starts[6])"), "\(check.report)")
        #expect(
            check.removals == [
                LogFolderCheck.Removal(
                    name: segment, offset: starts[6], bytes: size - starts[6], versions: 22...30, changes: 9)
            ])
        #expect(check.keptLast == 18)
        // Showing changes nothing; repairing moves the cut bytes aside, and the folder opens.
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count == size)
        let aside = try check.repair()
        let movedAside = try Data(contentsOf: URL(fileURLWithPath: "\(aside)/\(segment).from-byte-\(starts[6])"))
        #expect(movedAside.count == size - starts[6])
        let (log, replayed, last) = try Self.reopen(dir)
        log.close()
        #expect(last == 18 && replayed.changes.count == 18)
        #expect(try LogFolderCheck(directory: dir.path).verdict == .intact)
    }
}
