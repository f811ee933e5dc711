import Foundation
import Testing

@testable import PinwheelCore

/// Random inputs for both encoders: features of every kind over one context.
private struct RandomMessages {
    var rng: SeededRandom
    let context: FeatureContext
    static let columns = ["name", "cc", "note"]
    static let rows = 40

    init(seed: UInt64) {
        rng = SeededRandom(seed: seed)
        let values = (0..<Self.rows * Self.columns.count).map { k -> PropertyValue? in
            [nil, "Paris", "FR", "Quote \"q\"\n", "Zürich 🏔", .number(Double(k) / 4), .bool(k % 2 == 0)][k * 7 % 7]
        }
        var context = FeatureContext(
            properties: PropertyTable(columns: Self.columns, values: values),
            aggregates: seed % 3 == 0
                ? []
                : [
                    Aggregate(name: "people", operation: .sum, column: "pop"),
                    Aggregate(name: "meanPop", operation: .mean, column: "pop"),
                    Aggregate(name: "low", operation: .min, column: "h"),
                ],
            values: { f in
                [Double(f.count) * 1234.5, Double(f.count) * 3, f.id % 3 == 0 ? .nan : Double(f.id % 97) / 7]
            })
        context.names = [2_147_483_700: "bus-12", 2_147_483_701: "tram ü"]
        if seed % 2 == 0 {
            // Breakdowns over 13 slots and two flags, from the id and count alone.
            context.contents = ClusterContents(
                column: "kind", values: (0..<12).map { "k\($0)" },
                flags: [
                    try! FlagRule(parsing: #"a=["==",["get","kind"],"k1"]"#),
                    try! FlagRule(parsing: #"b=["==",["get","kind"],null]"#),
                ])
            context.addContents = { f, counts in counts = Self.counts(f) }
        }
        self.context = context
    }

    /// A cluster's made-up counts: up to three values present (one of them sometimes past 127), two flags.
    static func counts(_ f: Feature) -> [Int32] {
        var counts = [Int32](repeating: 0, count: 15)
        let count = Int32(f.count)
        let (a, b) = (Int(f.id % 13), Int(f.id / 13 % 13))
        let share = count > 2 ? Int32(f.id % UInt64(count - 1)) : 0
        counts[a] += count - share
        counts[b] += share
        counts[13] = Int32(f.id % 7)
        counts[14] = count / 2
        return counts
    }

    mutating func int(_ range: ClosedRange<UInt64>) -> UInt64 { UInt64.random(in: range, using: &rng) }
    mutating func degrees(_ limit: Double) -> Double { Double.random(in: -limit...limit, using: &rng) }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &rng) < p }

    mutating func feature() -> Feature {
        let lat = chance(0.1) ? 90 : degrees(90)
        let lon = chance(0.1) ? -180 : degrees(180)
        if chance(0.5) {
            let tag = int(1...25)
            let id = tag << 32 | int(0...UInt64(UInt32.max))
            let parent: FeatureID? =
                chance(0.2) ? nil : chance(0.5) ? (tag - 1) << 32 | id & 0xFFFF_FFFF : int(1...22) << 32 | int(0...9999)
            return Feature(id: id, lat: lat, lon: lon, count: UInt32(int(2...100_000)), parent: parent, row: -1)
        }
        let id = chance(0.1) ? 2_147_483_700 + int(0...1) : chance(0.5) ? int(0...999) : int(0...UInt64(UInt32.max))
        let parent: FeatureID? = chance(0.3) ? nil : chance(0.5) ? id : int(1...17) << 32 | int(0...UInt64(UInt32.max))
        let anchor = chance(0.3) ? Coordinate(lat: degrees(90), lon: degrees(180)) : nil
        return Feature(
            id: id, lat: lat, lon: lon, count: 1, parent: parent, anchor: anchor, row: Int32(int(0...39)))
    }

    mutating func features() -> [Feature] { (0..<int(0...12)).map { _ in feature() } }

    mutating func whole() -> UInt64 { chance(0.2) ? int(0...9_007_199_254_740_991) : int(0...300) }

    /// What a client must read for `f`: the protocol's rules written out again.
    func expected(_ f: Feature) -> WireFeature {
        var w = WireFeature(id: f.id, lat: f.lat, lon: f.lon, count: f.count, parent: f.parent, anchor: f.anchor)
        if f.isPoint {
            w.key = f.id <= UInt32.max ? context.names[UInt32(f.id)] : nil
            for (c, column) in Self.columns.enumerated() {
                let value = context.properties.value(row: Int(f.row), column: c)
                if let value { w.properties[column] = value }
            }
        } else {
            let reduced = context.values(f)
            for (c, a) in context.aggregates.enumerated() {
                w.aggregates[a.name] = a.value(reduced: reduced[reduced.startIndex + c], count: f.count)
            }
            if !context.contents.isEmpty {
                let counts = Self.counts(f)
                for v in 0..<13 where counts[v] != 0 { w.groups[v] = Int(counts[v]) }
                w.flags = [Int(counts[13]), Int(counts[14])]
            }
        }
        return w
    }
}

/// NaN (an aggregate's `null`) made comparable, and coordinates on the grid the binary form carries them on.
private func comparable(_ m: ServerMessage, as encoding: WireEncoding? = nil) -> ServerMessage {
    func fix(_ f: WireFeature) -> WireFeature {
        var f = encoding.map { $0 == .binary ? f.onBinaryGrid : f.writtenAsJSON } ?? f
        f.aggregates = f.aggregates.mapValues { $0.isNaN ? .infinity : $0 }
        return f
    }
    switch m {
    case .batch(var b):
        b.add = b.add.map(fix)
        b.update = b.update.map(fix)
        return .batch(b)
    case .expansion(var e):
        if case .spread(let members) = e.result { e.result = .spread(members.map(fix)) }
        return .expansion(e)
    default:
        return m
    }
}

@Suite("Binary encoding pinwheel.v1+bin")
struct BinaryEncodingTests {
    @Test(
        "every server message round-trips through JSON with coordinates to 7 decimals, and through a binary session with coordinates on its grid"
    )
    func randomRoundTrips() throws {
        // One session throughout: each binary frame's deltas start where the previous one's ended, and
        // removals name slots of what the client holds, which `held` models as the server does.
        var binary = BinaryMessageEncoder(headroom: 16)
        var decoder = BinaryDecoder()
        var held = ClientFeatureSet()
        for seed in UInt64(1)...60 {
            var r = RandomMessages(seed: seed)
            var json = MessageEncoder(headroom: 16)
            // (message, JSON text, binary session frame)
            var cases: [(ServerMessage, [UInt8], (bytes: [UInt8], binary: Bool))] = []

            let add = r.features()
            let update = r.features()
            var remove = held.ids.filter { _ in r.chance(0.3) }
            let removeSlots = held.orderForRemoval(&remove)
            let capped =
                r.chance(0.3) ? BatchMessage.Capped(limit: 10_000, available: Int(r.int(10_001...99_999))) : nil
            let (seq, number, version, done) = (r.whole(), r.whole(), r.chance(0.5) ? 0 : r.whole(), r.chance(0.5))
            json.batch(
                seq: seq, number: number, remove: remove, add: add, update: update, done: done, capped: capped,
                version: version, context: r.context)
            binary.batch(
                seq: seq, number: number, removeSlots: removeSlots, held: held.count, add: add, update: update,
                done: done, capped: capped, version: version, context: r.context)
            held.apply(remove: remove, add: add, update: update)
            let batch = ServerMessage.batch(
                BatchMessage(
                    seq: seq, batch: number, remove: remove, add: add.map(r.expected), update: update.map(r.expected),
                    done: done, capped: capped, version: version))
            cases.append((batch, Array(json.message), (Array(binary.message), true)))

            let id = r.int(0...(1 << 53) - 1)
            let expansion: Expansion = r.chance(0.5) ? .zoom(Double(r.int(0...240)) / 10) : .spread(r.features())
            json.expansion(id: id, expansion, context: r.context)
            binary.expansion(id: id, expansion, context: r.context)
            let result: ExpansionMessage.Result
            switch expansion {
            case .zoom(let z): result = .zoom(z)
            case .spread(let members): result = .spread(members.map(r.expected))
            }
            cases.append(
                (
                    .expansion(ExpansionMessage(id: id, result: result)), Array(json.message),
                    (Array(binary.message), true)
                ))

            for encoding in WireEncoding.allCases {
                let hello = HelloMessage(
                    session: String(seed, radix: 16), algorithm: .hierarchical,
                    dataset: .init(
                        name: "set \(seed)", points: Int(r.int(0...1_000_000)),
                        bounds: r.chance(0.2) ? nil : BBox(west: r.degrees(180), south: -10, east: 20, north: 30),
                        aggregates: r.context.aggregates),
                    encoding: encoding)
                json.hello(hello)
                // Only a binary session's hello names pinwheel.v1+bin; both travel as text.
                if encoding == .binary {
                    cases.append((.hello(hello), [], (Array(json.message), false)))
                } else {
                    cases.append((.hello(hello), Array(json.message), (Array(json.message), false)))
                }
            }
            let error = WireError(.invalidField, field: r.chance(0.5) ? "zoom" : nil, message: "bad \"\(seed)\"")
            json.error(error)
            cases.append((.error(error), Array(json.message), (Array(json.message), false)))
            let viewports = (0..<r.int(0...3)).map { k in
                PresenceViewport(
                    session: "s\(k)", bbox: BBox(west: r.degrees(180), south: -1, east: 2, north: 3), zoom: 4.5)
            }
            var writer = JSONWriter(capacity: 64)
            let presence = PresenceEncoding.message(
                viewports.map { v in
                    PresenceEncoding.entry(v, into: &writer)
                    return writer.bytes
                })
            cases.append((.presence(viewports), presence, (presence, false)))

            for (message, text, frame) in cases {
                if !text.isEmpty {
                    #expect(
                        comparable(try ServerMessage.decode(text)) == comparable(message, as: .json), "seed \(seed)")
                }
                let decoded = try decoder.decode(frame: frame.bytes, binary: frame.binary)
                #expect(comparable(decoded) == comparable(message, as: .binary), "seed \(seed)")
            }
        }
    }

    /// A batch touching every part of the layout: capped, a version, removes, a named point with
    /// properties and an anchor, a cluster with aggregates, an update.
    func fullBatch() -> [UInt8] {
        let r = RandomMessages(seed: 1)
        var encoder = BinaryMessageEncoder()
        // The client holds 17 and 4294967396, in slots 0 and 1.
        encoder.batch(
            seq: 9, number: 7, removeSlots: [1, 0], held: 2,
            add: [
                Feature(
                    id: 2_147_483_700, lat: 1.5, lon: 2.5, count: 1, parent: 2_147_483_700,
                    anchor: Coordinate(lat: 1.4, lon: 2.6), row: 0),
                Feature(id: 5 << 32 | 3, lat: 48.85, lon: 2.35, count: 12, parent: 4 << 32 | 9, row: -1),
            ],
            update: [Feature(id: 18, lat: -3, lon: 4, count: 1, parent: nil, row: 1)], done: true,
            capped: .init(limit: 10, available: 99), version: 1207, context: r.context)
        return Array(encoder.message)
    }

    @Test("a frame cut short anywhere is refused, naming the byte where it ends")
    func truncated() throws {
        let bytes = fullBatch()
        var decoder = BinaryDecoder()
        decoder.hold([17, 4_294_967_396])
        for n in 0..<bytes.count {
            do {
                _ = try decoder.decode(Array(bytes[..<n]))
                Issue.record("a frame of \(n) of \(bytes.count) bytes decoded")
            } catch {
                #expect(error.message.contains("at byte") && error.message.contains("the frame ends early"), "\(error)")
            }
        }
        // The refused frames left the running state as it was.
        _ = try decoder.decode(bytes)
    }

    @Test(
        "bytes after the message, an unknown type or flag, a reserved flag bit and a bad name reference are refused")
    func rejections() throws {
        func decode(_ bytes: [UInt8]) throws(WireError) -> ServerMessage {
            var decoder = BinaryDecoder()
            return try decoder.decode(bytes)
        }
        #expect(
            throws: WireError(
                .invalidField, field: "type", message: "end of message at byte 3: 1 bytes left after the message")
        ) { try decode([0x05, 2, 0, 0]) }
        #expect(
            throws: WireError(
                .invalidField, field: "type",
                message: "first byte at byte 0: unknown message type 3 in 0x07; expected 1 (batch) or 2 (expansion)")
        ) { try decode([0x07, 1, 1]) }
        #expect(
            throws: WireError(
                .invalidField, field: "type", message: "first byte at byte 0: unknown expansion flags in 0x0a")
        ) { try decode([0x0A, 0]) }
        #expect(throws: WireError.self) { try decode([]) }
        // A seq below 0: zigzag −1 after the running 0.
        #expect(
            throws: WireError(
                .invalidField, field: "seq", message: "seq at byte 1: 0 + -1 is outside 0 to 2^53 − 1")
        ) { try decode([0x05, 1, 0]) }
        // batch seq 1 (zigzag 2), batch 1 (the first: 0), one add: point 1 with a flag byte (0x21),
        // flags 0x80 (reserved), lat 0, lon 0.
        #expect(
            throws: WireError(
                .invalidField, field: "add", message: "add[0] flags at byte 5: reserved bits set in 0x80")
        ) { try decode([0x21, 2, 0, 1, 0x21, 0x80, 0, 0]) }
        // A point with one property whose name refers to entry 1 of an empty table.
        #expect(
            throws: WireError(
                .invalidField, field: "add",
                message: "add[0] property 0 name at byte 9: name 1 is not in the table of 0 names"
            )
        ) { try decode([0x21, 2, 0, 1, 0x21, 0x08, 0, 0, 1, 1, 1, 0x61]) }
        // An unknown value tag.
        #expect(
            throws: WireError(
                .invalidField, field: "add", message: "add[0] property 0 value at byte 12: unknown value tag 7")
        ) { try decode([0x21, 2, 0, 1, 0x21, 0x08, 0, 0, 1, 0, 1, 0x61, 7]) }
        // The same with reference 0, a new name, and a string value (tag 0): decodes.
        guard case .batch(let b) = try decode([0x21, 2, 0, 1, 0x21, 0x08, 0, 0, 1, 0, 1, 0x61, 0, 1, 0x62]) else {
            Issue.record("not a batch")
            return
        }
        #expect(b.add == [WireFeature(id: 1, lat: 0, lon: 0, count: 1, properties: ["a": "b"])])
    }

    /// The annotated hex of docs/protocol.md's worked example: the bytes after each `| ` up to the next `|`.
    func documentedExample() throws -> [UInt8] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/protocol.md")
        let text = try String(contentsOf: url, encoding: .utf8)
        let start = try #require(text.range(of: "<!-- binary example -->"))
        let block = text[start.upperBound...].split(separator: "```", maxSplits: 2)[1]
        var bytes: [UInt8] = []
        for line in block.split(separator: "\n") {
            let hex = line.split(separator: "|", omittingEmptySubsequences: false).first ?? ""
            for pair in hex.split(separator: " ") { bytes.append(try #require(UInt8(pair, radix: 16))) }
        }
        return bytes
    }

    @Test("positions round halves up on their grid, negative ties included, and never past ±90° or ±180°")
    func gridRoundsHalvesUp() {
        #expect(BinaryGrid.fixed(-103.95659825, unit: 1, limit: BinaryGrid.lonLimit) == -1_039_565_982)
        #expect(BinaryGrid.fixed(-103.9565985, unit: 10, limit: BinaryGrid.lonLimit) == -1_039_565_980)
        #expect(BinaryGrid.fixed(2.35, unit: 10, limit: BinaryGrid.lonLimit) == 23_500_000)
        #expect(BinaryGrid.fixed(-0.00000005, unit: 1, limit: BinaryGrid.latLimit) == 0)
        // 180° on a zoom-2 cluster's grid of 2^16 units rounds to 27,466 × 65,536 > 1.8e9: one step back.
        #expect(BinaryGrid.fixed(180, unit: 1 << 16, limit: BinaryGrid.lonLimit) == 27_465 << 16)
        #expect(BinaryGrid.fixed(-180, unit: 1 << 16, limit: BinaryGrid.lonLimit) == -27_465 << 16)
        #expect(BinaryGrid.unit(of: 7) == 10)
        #expect(BinaryGrid.unit(of: 3 << 32 | 5) == 1 << 16)
        #expect(BinaryGrid.unit(of: 25 << 32) == 1)
        #expect(BinaryGrid.unit(of: 40 << 32) == 10)
        // The digest a client computes from the decoded position is the server's.
        for id: FeatureID in [7, 3 << 32 | 7, 15 << 32 | 7] {
            let feature = Feature(id: id, lat: 48.85, lon: -103.95659825, count: 2, parent: nil, row: 0)
            var encoder = BinaryMessageEncoder()
            encoder.batch(
                seq: 1, number: 1, removeSlots: [], held: 0, add: [feature], update: [], done: true,
                context: FeatureContext())
            var decoder = BinaryDecoder()
            guard case .batch(let b) = try? decoder.decode(Array(encoder.message)), let w = b.add.first else {
                Issue.record("no feature decoded")
                return
            }
            let decoded = Feature(id: id, lat: w.lat, lon: w.lon, count: w.count, parent: nil, row: 0)
            #expect(decoded.digest(.json) == feature.digest(.binary))
            #expect(id < 1 << 32 || decoded.digest(.json) != feature.digest(.json), "a cluster's grid is coarser")
        }
    }

    @Test("the worked example in docs/protocol.md is what the encoder writes, and decodes to its JSON form")
    func documentedBytes() throws {
        var encoder = BinaryMessageEncoder()
        let cluster = Feature(
            id: 13 << 32 | 2_000_123, lat: 48.8566, lon: 2.3522, count: 37, parent: 12 << 32 | 2_000_123, row: -1)
        let point = Feature(id: 2_000_150, lat: 48.86, lon: 2.34, count: 1, parent: 13 << 32 | 2_000_123, row: 0)
        // The client reported holding 5, 8, 4294967396, 9 and 12: the cluster removed is in slot 2.
        encoder.batch(
            seq: 7, number: 3, removeSlots: [2], held: 5, add: [cluster, point], update: [], done: false,
            context: FeatureContext())
        #expect(Array(encoder.message) == (try documentedExample()))
        var json = MessageEncoder()
        json.batch(
            seq: 7, number: 3, remove: [4_294_967_396], add: [cluster, point], update: [], done: false,
            context: FeatureContext())
        var decoder = BinaryDecoder()
        decoder.hold([5, 8, 4_294_967_396, 9, 12])
        guard case .batch(var expected) = try ServerMessage.decode(Array(json.message)) else {
            Issue.record("not a batch")
            return
        }
        expected.add = expected.add.map(\.onBinaryGrid)
        #expect(try decoder.decode(Array(encoder.message)) == .batch(expected))
    }

    @Test("encoding batches of 1000 features reuses the buffer: capacity stops growing")
    func reuse() {
        var encoder = BinaryMessageEncoder(capacity: 16)
        let features = (0..<1000).map {
            Feature(id: UInt64($0), lat: Double($0) / 7, lon: Double($0) / 3, count: 1, parent: nil, row: 0)
        }
        encoder.batch(
            seq: 1, number: 1, removeSlots: [], held: 0, add: features, update: [], done: true,
            context: FeatureContext())
        let capacity = encoder.writer.bytes.capacity
        for n in 2...20 {
            encoder.batch(
                seq: 1, number: UInt64(n), removeSlots: [], held: 0, add: features, update: [], done: true,
                context: FeatureContext())
        }
        #expect(encoder.writer.bytes.capacity == capacity)
    }

    /// The bytes of a batch adding one cluster of `count` points with `groups` (nil: no breakdown),
    /// after checking that the breakdown reads back whole.
    static func breakdownBatchSize(count: Int, _ groups: [Int: Int32]?) -> Int {
        let cluster = Feature(id: 3 << 32 | 77, lat: 10, lon: 20, count: UInt32(count), parent: nil, row: -1)
        var context = FeatureContext()
        if let groups {
            context.contents = ClusterContents(column: "kind", values: (0..<12).map { "k\($0)" }, flags: [])
            context.addContents = { _, counts in for (v, n) in groups { counts[v] = n } }
        }
        var encoder = BinaryMessageEncoder()
        encoder.batch(
            seq: 1, number: 1, removeSlots: [], held: 0, add: [cluster], update: [], done: true, context: context)
        var decoder = BinaryDecoder()
        do {
            guard case .batch(let b) = try decoder.decode(Array(encoder.message)) else {
                Issue.record("not a batch")
                return 0
            }
            #expect(b.add.first?.groups == (groups ?? [:]).mapValues(Int.init))
        } catch {
            Issue.record("the batch does not decode: \(error)")
        }
        return encoder.message.count
    }

    @Test(
        "a breakdown costs a flag byte, then per value present one byte below 8 points, two below 1,024, the last none for its count"
    )
    func breakdownBytes() throws {
        let size = { Self.breakdownBatchSize(count: 150, $0) }
        let bare = size(nil)
        // The flag byte, then a byte per count below 8, two below 1,024; the last value's count is
        // not written.
        #expect(size([0: 5, 4: 45, 12: 100]) - bare == 1 + 1 + 2 + 1)
        #expect(size([12: 150]) - bare == 1 + 1)
        #expect(size([1: 100, 7: 50]) - bare == 1 + 2 + 1)
        #expect(size([0: 3, 2: 1, 3: 2, 12: 144]) - bare == 1 + 4)
    }

    @Test("a cluster holding every value in large numbers writes them as a mask; any breakdown reads back whole")
    func breakdownForms() throws {
        let bare = Self.breakdownBatchSize(count: 1300, nil)
        // 13 values of 100: a list takes 2 bytes for each but the last; the mask 3 bytes, then one each.
        let every = Dictionary(uniqueKeysWithValues: (0..<13).map { ($0, Int32(100)) })
        #expect(Self.breakdownBatchSize(count: 1300, every) - bare == 1 + 3 + 12)
        var random = SplitMix64(seed: 48)
        for _ in 0..<300 {
            var groups: [Int: Int32] = [:]
            for v in 0..<13 where random.next() % 3 == 0 {
                groups[v] = Int32(1 + random.next() % [5, 200, 40_000][v % 3])
            }
            if groups.isEmpty { groups[Int(random.next() % 13)] = 1 }
            _ = Self.breakdownBatchSize(count: Int(groups.values.reduce(0, +)), groups)
        }
    }
}
