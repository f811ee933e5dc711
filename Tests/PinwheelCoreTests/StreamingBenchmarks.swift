import Foundation
import Testing

@testable import PinwheelCore

/// Figures for docs/performance.md: `swift test -c release --filter Benchmarks` prints them. Each test
/// checks its result; none asserts a time, so a loaded machine slows them without failing them.
@Suite("Benchmarks", .serialized)
struct StreamingBenchmarks {
    /// Timings of `runs` calls of `body`, in microseconds: the best (the machine's speed when nothing
    /// else runs; other processes only ever add time) and the median.
    func measure(runs: Int, _ body: () -> Void) -> (best: Double, median: Double) {
        #if DEBUG
            // Debug builds only check the results; their timings mean nothing.
            let runs = 1
        #endif
        var times: [Double] = []
        for _ in 0..<runs {
            let start = ContinuousClock.now
            body()
            times.append((ContinuousClock.now - start).milliseconds * 1000)
        }
        times.sort()
        return (times[0], times[runs / 2])
    }

    /// The GeoNames file shipped in the repository's data/.
    func geonamesBytes() throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../data/geonames_rg_cities1000_145k.csv")
        return try [UInt8](Data(contentsOf: url))
    }

    func geonames() throws -> Dataset {
        try CSVParser.parse(geonamesBytes()).dataset
    }

    @Test("parse the GeoNames 145k CSV")
    func parseCSV() throws {
        let bytes = try geonamesBytes()
        var rows = 0
        let us = measure(runs: 7) { rows = (try? CSVParser.parse(bytes))?.dataset.count ?? 0 }
        print(
            String(
                format: "parse geonames 145k CSV (%d bytes): best %.1f ms, median %.1f ms", bytes.count,
                us.best / 1000, us.median / 1000))
        #expect(rows == 144_563)
    }

    @Test("encode a 1000-feature batch of real points with properties, and clusters with aggregates")
    func encodeBatch() throws {
        let data = try geonames()
        var rng = SeededRandom(seed: 11)
        let features = (0..<1000).map { k -> Feature in
            let row = Int(rng.next() % UInt64(data.count))
            return k % 10 == 0
                ? Feature(
                    id: (UInt64(k) << 32) | 7, lat: data.lat(row) + 1e-7 * Double(k), lon: data.lon(row) / 3,
                    count: UInt32(k), parent: UInt64(k) << 33, row: -1)
                : Feature(
                    id: FeatureID(data.ids[row]), lat: data.lat(row), lon: data.lon(row), count: 1,
                    parent: FeatureID(data.ids[row]), row: Int32(row))
        }
        let context = FeatureContext(
            properties: data.properties, aggregates: [Aggregate(name: "population", operation: .sum, column: "pop")],
            values: { f in [Double(f.count) * 1234.5] })
        var encoder = MessageEncoder(headroom: 16)
        let us = measure(runs: 41) {
            encoder.batch(seq: 1, number: 1, remove: [], add: features, update: [], done: true, context: context)
        }
        let bytes = encoder.message.count
        print(
            String(
                format: "encode batch 1000 features (%d bytes): best %.0f µs (%.0f MB/s), median %.0f µs", bytes,
                us.best, Double(bytes) / us.best, us.median))
        var binary = BinaryMessageEncoder(headroom: 16)
        let binaryUs = measure(runs: 41) {
            binary.batch(
                seq: 1, number: 1, removeSlots: [], held: 0, add: features, update: [], done: true, context: context)
        }
        let binaryBytes = binary.message.count
        print(
            String(
                format:
                    "encode batch 1000 features, pinwheel.v1+bin (%d bytes): best %.0f µs (%.0f MB/s), median %.0f µs",
                binaryBytes, binaryUs.best, Double(binaryBytes) / binaryUs.best, binaryUs.median))
        // A session's first frame, which a new decoder reads: the timed ones each continued the last.
        var first = BinaryMessageEncoder()
        first.batch(
            seq: 1, number: 1, removeSlots: [], held: 0, add: features, update: [], done: true, context: context)
        var decoder = BinaryDecoder()
        guard case .batch(let decoded) = try ServerMessage.decode(Array(encoder.message)),
            case .batch(let binaryDecoded) = try decoder.decode(Array(first.message))
        else {
            Issue.record("not a batch")
            return
        }
        #expect(decoded.add.count == 1000 && binaryDecoded.add.count == 1000)
        #expect(decoded.add[1].properties["name"] == data.properties.value(row: Int(features[1].row), column: 0))
        #expect(binaryDecoded.add.map(\.properties) == decoded.add.map(\.properties))
    }

    @Test("decode and validate a viewport message")
    func decodeViewport() throws {
        let text = Array(
            #"{"type":"viewport","seq":7,"bbox":[-0.5,51.3,0.3,51.7],"zoom":11.4,"width":1280,"height":800}"#.utf8)
        var last: ClientMessage?
        let us = measure(runs: 11) {
            for _ in 0..<1000 { last = try? ClientMessage.decode(text) }
        }
        var general: ClientMessage?
        let generalUs = measure(runs: 11) {
            for _ in 0..<1000 { general = text.withUnsafeBufferPointer { try? ClientMessage.decodeGeneral($0) } }
        }
        print(
            String(
                format: "decode viewport message: best %.2f µs, median %.2f µs (through a JSON tree: %.2f, %.2f µs)",
                us.best / 1000, us.median / 1000, generalUs.best / 1000, generalUs.median / 1000))
        guard case .viewport(let v) = last else {
            Issue.record("not a viewport")
            return
        }
        #expect(v.seq == 7 && general == last)
    }

    @Test("decode and validate a 1,000-line ingest body")
    func decodeChangeLines() throws {
        // The load tool's mix: moves and inserts with coordinates, a few deletes.
        var random = SeededRandom(seed: 4)
        var w = JSONWriter()
        for k in 0..<1000 {
            let key: PointKey =
                k % 20 == 0 ? .name("load-\(k)") : .number(UInt32.random(in: 0...999_999, using: &random))
            let change: Change =
                k % 20 == 1
                ? .delete(key)
                : .upsert(
                    key, lat: Double.random(in: -60...70, using: &random),
                    lon: Double.random(in: -180...180, using: &random), properties: k % 10 == 0 ? ["kind": "bus"] : [:])
            change.encode(into: &w)
            w.byte(UInt8(ascii: "\n"))
        }
        let body = w.bytes
        var last = ChangeLines()
        let us = measure(runs: 11) { last = ChangeLines.parse(body) }
        let lines = body.split(separator: UInt8(ascii: "\n")).map(Array.init)
        var general: [Change] = []
        let generalUs = measure(runs: 11) {
            general = lines.compactMap { line in line.withUnsafeBufferPointer { try? Change.decodeGeneral($0) } }
        }
        print(
            String(
                format: "decode 1,000 change lines: best %.1f µs, median %.1f µs (through a JSON tree: %.1f, %.1f µs)",
                us.best, us.median, generalUs.best, generalUs.median))
        #expect(last.changes.count == 1000 && last.rejected.isEmpty && last.changes == general)
    }

    @Test("diff and plan a pan: 1000 and 10000 features in view, a third of them new")
    func diffAndPlan() {
        for n in [1000, 10_000] {
            let clock = ManualClock()
            var pacer = Pacer(clock: clock, options: PacerOptions(window: 1))
            let old = (0..<n).map { pin(FeatureID($0), lat: Double($0 % 100) / 10, lon: Double($0 / 100) / 10) }
            let new = (n / 3..<n + n / 3).map {
                pin(FeatureID($0), lat: Double($0 % 100) / 10, lon: Double($0 / 100) / 10)
            }
            // Send and acknowledge everything so the client has `old`.
            var action = pacer.show(seq: 1, features: old, viewport: box(5, 5))
            while action != .idle {
                switch action {
                case .send(let b): action = pacer.acknowledge(AckMessage(batch: b.number, applied: 0, ms: 0))
                case .wait(let t):
                    clock.advance(to: t)
                    action = pacer.poll()
                case .idle: break
                }
            }
            // One unacknowledged (empty) batch fills the window, so the timed calls plan without sending.
            let emptyDone = pacer.show(seq: 2, features: old, viewport: box(5, 5))
            var empty = PacedBatch(seq: 2, number: pacer.inFlight[0].number, done: true)
            empty.held = old.count
            #expect(emptyDone == .send(empty))
            var seq: UInt64 = 3
            var actions: [Pacer<ManualClock>.Action] = []
            let us = measure(runs: 21) {
                actions.append(pacer.show(seq: seq, features: new, viewport: box(5, 5)))
                seq += 1
            }
            print(
                String(
                    format: "diff+plan %d features, %d changed: best %.0f µs, median %.0f µs", n, 2 * (n / 3),
                    us.best, us.median))
            #expect(actions.allSatisfy { $0 == .idle })
            #expect(pacer.client.count == n && pacer.pendingMarkers == 2 * (n / 3))
        }
    }
}
