import Testing

@testable import PinwheelCore

@Suite("Change codec")
struct ChangeCodecTests {
    static func randomChanges(_ random: inout SeededRandom, count: Int) -> [Change] {
        (0..<count).map { _ in
            let key: PointKey =
                Bool.random(using: &random)
                ? .number(UInt32.random(in: 0...PointKey.maxNumber, using: &random))
                : .name(["bus-12", "ü-straße", "點", String(repeating: "x", count: 128)].randomElement(using: &random)!)
            if Int.random(in: 0..<4, using: &random) == 0 { return .delete(key) }
            let lat = [-90, 90, 0, Double.random(in: -90...90, using: &random)].randomElement(using: &random)!
            let lon = [-180, 180, Double.random(in: -180...180, using: &random)].randomElement(using: &random)!
            var properties: [String: PropertyValue] = [:]
            let values: [PropertyValue] = ["välue", .number(-2.5), .bool(true), .bool(false), .number(1e300)]
            for k in 0..<Int.random(in: 0..<4, using: &random) {
                properties["p\(k)"] = values.randomElement(using: &random)!
            }
            return .upsert(key, lat: lat, lon: lon, properties: properties)
        }
    }

    @Test("a record written before values had types (op 0, string values) still reads, its values as strings")
    func stringRecords() throws {
        var w = ByteWriter()
        w.u32(1)
        w.u8(0)
        w.u8(0)
        w.u32(5)
        w.f64(1.5)
        w.f64(2.5)
        w.u16(1)
        w.string("line")
        w.string("12")
        let changes = try ChangeCodec.decode(w.bytes[...])
        #expect(changes == [.upsert(.number(5), lat: 1.5, lon: 2.5, properties: ["line": .string("12")])])
    }

    @Test("random change lists round-trip", arguments: [UInt64(1), 2, 3, 4])
    func roundTrip(seed: UInt64) throws {
        var random = SeededRandom(seed: seed)
        for count in [0, 1, 17, 300] {
            let changes = Self.randomChanges(&random, count: count)
            #expect(try ChangeCodec.decode(ChangeCodec.encode(changes)[...]) == changes)
        }
    }

    @Test("every truncation, a trailing byte and an unknown op are refused with a reason")
    func damage() throws {
        var random = SeededRandom(seed: 9)
        let bytes = ChangeCodec.encode(Self.randomChanges(&random, count: 12))
        for n in 0..<bytes.count {
            #expect(throws: SnapshotError.self) { try ChangeCodec.decode(bytes[..<n]) }
        }
        #expect(throws: SnapshotError.self) { try ChangeCodec.decode((bytes + [0])[...]) }
        var bad = ChangeCodec.encode([.delete(.number(1))])
        bad[4] = 9
        #expect(throws: SnapshotError(offset: 4, reason: "unknown op 9")) { try ChangeCodec.decode(bad[...]) }
    }

    @Test("an ingest line encodes and decodes back to the same change")
    func lines() throws {
        var random = SeededRandom(seed: 5)
        for change in Self.randomChanges(&random, count: 200) {
            var w = JSONWriter()
            change.encode(into: &w)
            #expect(try Change.decode(w.bytes) == change)
        }
    }

    @Test("an ingest body is read line by line, with CRLF endings, blank lines and a byte order mark")
    func bodyLines() {
        let body = Array(
            "\u{FEFF}{\"op\":\"delete\",\"id\":7}\r\n\n{\"op\":\"nap\",\"id\":1}\n{\"op\":\"delete\",\"id\":\"a\"}".utf8
        )
        let read = ChangeLines.parse(body)
        #expect(read.changes == [.delete(.number(7)), .delete(.name("a"))])
        #expect(read.lines == [1, 4])
        #expect(read.rejected.map(\.line) == [3])
    }

    @Test("the one-pass reading of change lines answers as the general path does, or leaves it to it")
    func plainFormsAgree() throws {
        var random = SeededRandom(seed: 31)
        var read = 0
        for (k, change) in Self.randomChanges(&random, count: 3000).enumerated() {
            var w = JSONWriter()
            change.encode(into: &w)
            var text = w.bytes
            // Some lines as written, the others with one byte changed: every form, valid or not, the
            // one-pass reader meets.
            if k % 3 != 0 {
                text[Int.random(in: 0..<text.count, using: &random)] = Array(#" {}[]":,.-+0159eEnaultrspdfi\"#.utf8)
                    .randomElement(using: &random)!
            }
            let general = text.withUnsafeBufferPointer { try? Change.decodeGeneral($0) }
            if let plain = text.withUnsafeBufferPointer({ Change.decodePlain($0) }) {
                read += 1
                #expect(plain == general, "\(String(decoding: text, as: UTF8.self))")
            }
        }
        // The one-pass reader took every unchanged line and some changed ones.
        #expect(read >= 1000)
        // Property values of every kind, as the general path keeps them.
        let kinds = #"{"op":"upsert","id":3,"lat":1,"lon":2,"properties":{"a":"x","b":2.5,"c":7,"d":true,"e":false}}"#
        let expected = Change.upsert(
            .number(3), lat: 1, lon: 2, properties: ["a": "x", "b": 2.5, "c": 7, "d": true, "e": false])
        #expect(Array(kinds.utf8).withUnsafeBufferPointer { Change.decodePlain($0) } == expected)
        #expect(try Change.decode(kinds) == expected)
        // Forms it leaves to the general path, which reads them or names what is wrong.
        for text in [
            #"{"op":"delete","id":1,"id":2}"#, #"{"op":"delete","id":1,"note":"x"}"#,
            #"{"op":"delete","id":1,"lat":95}"#, #"{"op":"upsert","id":"b\u0075s","lat":1,"lon":2}"#,
            #"{"op":"upsert","id":1,"lat":1,"lon":2,"properties":{"a":null}}"#,
            #"{"op":"upsert","id":1,"lat":1,"lon":2,"properties":{"a":1,"a":2}}"#,
            #"{"op":"upsert","id":1,"lat":95,"lon":2}"#, #"{"op":"upsert","id":1.5,"lat":1,"lon":2}"#,
            #"{"op":"upsert","id":"","lat":1,"lon":2}"#, #"{"op":"upsert","id":1,"lat":1,"lon":1e999}"#,
            #"{"op":"move","id":1}"#, "{}", "[]",
        ] {
            let bytes = Array(text.utf8)
            #expect(bytes.withUnsafeBufferPointer { Change.decodePlain($0) } == nil, "\(text)")
        }
        #expect(try Change.decode(#"{"op":"delete","id":1,"id":2}"#) == .delete(.number(2)))
        #expect(throws: WireError.self) { try Change.decode(#"{"op":"upsert","id":1,"lat":95,"lon":2}"#) }
    }
}
