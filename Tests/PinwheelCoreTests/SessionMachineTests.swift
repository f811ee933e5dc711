import Synchronization
import Testing

@testable import PinwheelCore

/// The session as the server runs it, driven turn by turn with a manual clock: client frames in,
/// encoded messages out, decoded and applied by a simulated page that acknowledges every batch.
@Suite("Session machine")
struct SessionMachineTests {
    static let dataset = SyntheticGenerator(seed: 11).dataset(count: 20_000)
    static let clusterers: [Algorithm: any Clusterer] = Dictionary(
        uniqueKeysWithValues: Algorithm.allCases.map { ($0, try! ClustererFactory.make($0, dataset: dataset)) })
    static let europe = BBox(west: -5, south: 42, east: 15, north: 52)

    /// A session and the page it serves.
    struct Harness {
        let clock = ManualClock()
        var machine: SessionMachine<ManualClock>
        /// What the page shows, by id.
        var page: [FeatureID: WireFeature] = [:]
        var wakeAt: ManualClock.Instant?
        var seq: UInt64 = 0
        /// Every server message of the last turn asked for (not of the acks' turns it led to), decoded.
        var last: [ServerMessage] = []
        /// Every batch the page received.
        var batches: [BatchMessage] = []
        var firstBatchLatencies: [Duration] = []
        var windowWaits: [Duration] = []
        /// Each turn's ``SessionActions/acknowledgementsCanWait``, in the order the turns ended.
        var acknowledgementsCouldWait: [Bool] = []
        /// The data version each served viewport was read at (``SessionActions/servedVersion``).
        var servedVersions: [UInt64] = []
        var acks = true
        /// Planning memory lent to every turn, as a server's worker lends its own; nil: the machine
        /// keeps its own.
        var lent: PlanScratch?

        init(
            options: SessionOptions = SessionOptions(), algorithm: Algorithm = .hierarchical,
            clusterers: @escaping @Sendable (Algorithm) -> any Clusterer = { SessionMachineTests.clusterers[$0]! },
            filtered: (@Sendable (Algorithm, EffectiveFilter) throws(WireError) -> any Clusterer)? = nil
        ) {
            machine = SessionMachine(
                clock: clock, options: options, session: "s1",
                dataset: HelloMessage.DatasetInfo(
                    name: "synthetic", points: SessionMachineTests.dataset.count, bounds: nil),
                clusterOptions: HelloMessage.Options(
                    minZoom: 0, maxZoom: 16, minPoints: 2, radius: 40, extent: 512, spread: "adaptive",
                    maxClusters: 32),
                clusterers: filtered ?? { algorithm, _ in clusterers(algorithm) }, algorithm: algorithm)
        }

        /// One turn: the messages arrive together, then the machine flushes.
        @discardableResult
        mutating func turn(_ messages: [ClientMessage] = [], tick: Bool = false) throws -> [ServerMessage] {
            if lent != nil { machine.swapScratch(&lent!) }
            defer { if lent != nil { machine.swapScratch(&lent!) } }
            var actions = SessionActions<ManualClock>()
            if tick { machine.tick(actions: &actions) }
            for m in messages { _ = machine.received(Array(m.json.utf8), at: clock.now, actions: &actions) }
            machine.flush(actions: &actions)
            return try apply(actions)
        }

        /// A turn in which the shared clusterers got newer data.
        @discardableResult
        mutating func dataChanged() throws -> [ServerMessage] {
            var actions = SessionActions<ManualClock>()
            machine.dataChanged()
            machine.flush(actions: &actions)
            return try apply(actions)
        }

        mutating func opened() throws -> [ServerMessage] {
            var actions = SessionActions<ManualClock>()
            machine.opened(actions: &actions)
            return try apply(actions)
        }

        /// The page applies the turn's batches; its acks form the next turn, as a real page's would.
        private mutating func apply(_ actions: SessionActions<ManualClock>) throws -> [ServerMessage] {
            if let t = actions.wakeAt { wakeAt = t }
            firstBatchLatencies += actions.firstBatchLatencies
            windowWaits += actions.windowWaits
            acknowledgementsCouldWait.append(actions.acknowledgementsCanWait)
            if let version = actions.servedVersion { servedVersions.append(version) }
            let messages = try actions.messages.map { try ServerMessage.decode(Array($0.payload)) }
            var acksToSend: [ClientMessage] = []
            for case .batch(let b) in messages {
                batches.append(b)
                for id in b.remove { #expect(page.removeValue(forKey: id) != nil, "removed an id the page lacks") }
                for f in b.update { #expect(page.updateValue(f, forKey: f.id) != nil, "updated an id the page lacks") }
                for f in b.add { #expect(page.updateValue(f, forKey: f.id) == nil, "added an id the page has") }
                acksToSend.append(
                    .ack(AckMessage(batch: b.batch, applied: b.remove.count + b.add.count + b.update.count, ms: 2)))
            }
            if acks && !acksToSend.isEmpty { try turn(acksToSend) }
            last = messages
            return messages
        }

        /// Runs timers until none is pending (or `limit` steps), the page acking as it goes.
        mutating func settle(limit: Int = 10_000) throws {
            for _ in 0..<limit {
                guard let t = wakeAt else { return }
                wakeAt = nil
                clock.advance(to: t)
                try turn(tick: true)
            }
        }

        mutating func viewport(_ box: BBox, zoom: Double, width: Int = 3840, height: Int = 2160) -> ClientMessage {
            seq += 1
            return .viewport(ViewportMessage(seq: seq, bbox: box, zoom: zoom, width: width, height: height))
        }

        func expected(_ box: BBox, zoom: Double, algorithm: Algorithm = .hierarchical) -> Set<FeatureID> {
            var out: [Feature] = []
            SessionMachineTests.clusterers[algorithm]!.features(in: box, zoom: zoom, into: &out)
            return Set(out.map(\.id))
        }
    }

    /// The synthetic points with a boolean `even` (of the id) and a number `tens` (id % 100 / 10).
    static let typed: Dataset = {
        var d = dataset
        d.properties = PropertyTable(
            columns: ["even", "tens"],
            values: d.ids.flatMap { id -> [PropertyValue?] in [.bool(id % 2 == 0), .number(Double(id % 100 / 10))] })
        return d
    }()

    /// Hierarchical indexes over the points each filter lets through, built from the typed points.
    static let filtered: @Sendable (Algorithm, EffectiveFilter) -> any Clusterer = { algorithm, filter in
        guard let expression = filter.expression else { return clusterers[algorithm]! }
        return try! ClustererFactory.make(algorithm, dataset: typed.filtered(by: expression))
    }

    @Test(
        "a settings filter streams the view over the matching points as a diff, null clears it, a bad one changes nothing"
    )
    func filters() throws {
        var h = Harness(filtered: Self.filtered)
        _ = try h.opened()
        try h.turn([h.viewport(Self.europe, zoom: 5)])
        try h.settle()
        let all = h.expected(Self.europe, zoom: 5)
        #expect(Set(h.page.keys) == all)
        let json = try JSONReader.parse(Array(#"["all", ["get", "even"], [">=", ["get", "tens"], 5]]"#.utf8))
        let filter = try FilterExpression(json: json)
        let replies = try h.turn([.settings(SettingsMessage(filter: .set(filter)))])
        try h.settle()
        var out: [Feature] = []
        Self.filtered(.hierarchical, EffectiveFilter(requested: filter)).features(in: Self.europe, zoom: 5, into: &out)
        #expect(Set(h.page.keys) == Set(out.map(\.id)))
        #expect(Set(h.page.keys) != all)
        // Again hello, counting the matching points.
        guard case .hello(let hello)? = replies.first else {
            Issue.record("no hello after the filter")
            return
        }
        #expect(hello.dataset.points == Self.typed.filtered(by: filter).count)
        #expect(h.machine.filter.key == filter.key)
        // Points shown are only those passing the filter.
        for f in h.page.values where f.count == 1 && f.id <= UInt32.max {
            #expect(f.id % 2 == 0 && f.id % 100 / 10 >= 5)
        }
        let shown = h.page
        let bad = try h.turn([])  // nothing pending
        #expect(bad.isEmpty)
        var actions = SessionActions<ManualClock>()
        let text = #"{"type":"settings","filter":["all",["get","even"],[">",["get","tens"],{}]]}"#
        _ = h.machine.received(Array(text.utf8), at: h.clock.now, actions: &actions)
        let errors = try actions.messages.map { try ServerMessage.decode(Array($0.payload)) }
        guard case .error(let error)? = errors.first, errors.count == 1 else {
            Issue.record("expected one error, got \(errors)")
            return
        }
        #expect(error.code == .invalidField && error.field == "filter")
        #expect(error.message.hasPrefix("filter[2][2]: expected [\"get\", name]"), "\(error.message)")
        #expect(h.page == shown && h.machine.filter.key == filter.key)
        try h.turn([.settings(SettingsMessage(filter: .clear))])
        try h.settle()
        #expect(Set(h.page.keys) == all && h.machine.filter.isEverything)
    }

    @Test(
        "a settings the server cannot hold an index for is answered with its error and changes nothing: the view goes on as it was"
    )
    func refusedFilter() throws {
        let refusal = WireError(.filterMemory, message: "no room")
        var h = Harness(filtered: { algorithm, filter throws(WireError) in
            guard filter.isEverything else { throw refusal }
            return SessionMachineTests.clusterers[algorithm]!
        })
        _ = try h.opened()
        try h.turn([h.viewport(Self.europe, zoom: 5)])
        try h.settle()
        #expect(Set(h.page.keys) == h.expected(Self.europe, zoom: 5))
        let filter = try FilterExpression(json: JSONReader.parse(Array(#"["get", "even"]"#.utf8)))
        // Asked alone, and with an algorithm: the whole message is refused.
        for settings in [
            SettingsMessage(filter: .set(filter)), SettingsMessage(algorithm: .pcaTree, filter: .set(filter)),
        ] {
            let replies = try h.turn([.settings(settings)])
            guard case .error(let error)? = replies.first, replies.count == 1 else {
                Issue.record("expected one error, got \(replies)")
                return
            }
            #expect(error == refusal)
            #expect(h.machine.filter.isEverything && h.machine.algorithm == .hierarchical)
        }
        // The next viewport is served as before, over every point.
        try h.turn([h.viewport(Self.europe, zoom: 7)])
        try h.settle()
        #expect(Set(h.page.keys) == h.expected(Self.europe, zoom: 7))
        #expect(Set(h.page.keys) != h.expected(Self.europe, zoom: 5))
    }

    @Test("after a filter's hello, nothing planned before it goes out, though acks open the window again")
    func filterDropsUnsentRest() throws {
        var h = Harness(filtered: Self.filtered)
        h.acks = false
        _ = try h.opened()
        let world = BBox(west: -180, south: -85, east: 180, north: 85)
        try h.turn([h.viewport(world, zoom: 4)])
        #expect(h.batches.last?.done == false, "the view takes more than one batch")
        let json = try JSONReader.parse(Array(#"["all", ["get", "even"], [">=", ["get", "tens"], 5]]"#.utf8))
        // Two viewports: the rate limiter serves the first at once and holds the second back, so the
        // filter's view is served later.
        let sent = h.batches.count
        let replies = try h.turn([
            h.viewport(world, zoom: 4), h.viewport(world, zoom: 4),
            .settings(SettingsMessage(filter: .set(try FilterExpression(json: json)))),
        ])
        guard let hello = replies.firstIndex(where: { if case .hello = $0 { true } else { false } }) else {
            Issue.record("no hello after the filter: \(replies)")
            return
        }
        let before = sent + replies[..<hello].filter { if case .batch = $0 { true } else { false } }.count
        #expect(h.batches[before - 1].done == false, "the served view was not all sent before the filter")
        h.acks = true
        try h.turn(h.batches.map { .ack(AckMessage(batch: $0.batch, applied: 1, ms: 2)) })
        try h.settle()
        #expect(h.batches.count > before)
        for b in h.batches[before...] {
            for f in b.add + b.update where f.count == 1 && f.id <= UInt32.max {
                #expect(
                    f.id % 2 == 0 && f.id % 100 / 10 >= 5, "point \(f.id) of batch \(b.batch) is outside the filter")
            }
        }
    }

    @Test("the handshake is answered with hello carrying the session's limits")
    func hello() throws {
        var h = Harness(options: SessionOptions(viewportHz: 5, maxFeatures: 777))
        guard case .hello(let hello) = try h.opened().first else {
            Issue.record("no hello")
            return
        }
        #expect(hello.session == "s1" && hello.algorithm == .hierarchical)
        #expect(hello.limits.viewportHz == 5 && hello.limits.maxFeatures == 777)
    }

    @Test("messages come encoded behind the transport's headroom, so the transport sends them as they are")
    func headroom() throws {
        var h = Harness(options: SessionOptions(headroom: 16))
        var actions = SessionActions<ManualClock>()
        h.machine.opened(actions: &actions)
        let hello = try #require(actions.messages.first)
        #expect(hello.headroom == 16 && hello.framed.count == hello.payload.count + 16)
        guard case .hello = try ServerMessage.decode(Array(hello.payload)) else {
            Issue.record("the payload is not the hello")
            return
        }
    }

    @Test("a viewport is served until the page holds exactly the clusterer's features, the last batch done")
    func servesAViewport() throws {
        var h = Harness()
        let v = h.viewport(Self.europe, zoom: 6)
        try h.turn([v])
        try h.settle()
        #expect(Set(h.page.keys) == h.expected(Self.europe, zoom: 6))
        #expect(h.firstBatchLatencies == [.zero])
    }

    @Test("pans at 60 Hz end with the page showing exactly the last viewport's features")
    func pans() throws {
        var h = Harness()
        var box = Self.europe
        for step in 0..<120 {
            box = BBox(west: -5 + Double(step) * 0.1, south: 42, east: 15 + Double(step) * 0.1, north: 52)
            try h.turn([h.viewport(box, zoom: 6)])
            h.clock.advance(by: .nanoseconds(16_666_667))
            if let t = h.wakeAt, t <= h.clock.now {
                h.wakeAt = nil
                try h.turn(tick: true)
            }
        }
        try h.settle()
        #expect(Set(h.page.keys) == h.expected(box, zoom: 6))
        // The rate limiter served about 10 of the 60 viewports a second (two back to back at most).
        #expect(h.firstBatchLatencies.count <= 2 + 120 / 6 + 1)
    }

    @Test("of several viewports in one turn only the latest is computed")
    func coalescesATurn() throws {
        var h = Harness()
        let boxes = (0..<5).map { BBox(west: -5 + Double($0), south: 42, east: 15 + Double($0), north: 52) }
        let messages = boxes.map { h.viewport($0, zoom: 6) }
        h.acks = false
        let sent = try h.turn(messages)
        // The limiter lets two through back to back and holds the rest: of the two, only the second
        // is computed now, and the held fifth one after the next tick.
        let seqs = Set(sent.compactMap { m -> UInt64? in if case .batch(let b) = m { b.seq } else { nil } })
        #expect(seqs == [2])
        h.acks = true
        try h.turn(
            sent.compactMap { m in
                if case .batch(let b) = m { .ack(AckMessage(batch: b.batch, applied: 1, ms: 1)) } else { nil }
            })
        try h.settle()
        #expect(Set(h.batches.map(\.seq)) == [2, 5])
        #expect(Set(h.page.keys) == h.expected(boxes[4], zoom: 6))
    }

    @Test("a viewport coming faster than viewportHz waits for a tick, and the latest wins")
    func rateLimits() throws {
        var h = Harness(options: SessionOptions(viewportHz: 10))
        try h.turn([h.viewport(Self.europe, zoom: 6)])
        try h.turn([h.viewport(Self.europe, zoom: 5)])  // the burst of two lets this one through
        try h.settle()
        let held = h.viewport(Self.europe, zoom: 4)
        try h.turn([held])
        #expect(h.last.isEmpty && h.wakeAt != nil, "the third viewport within 100 ms was not held")
        let latest = h.viewport(Self.europe, zoom: 7)
        try h.turn([latest])
        try h.settle()
        #expect(Set(h.page.keys) == h.expected(Self.europe, zoom: 7))
    }

    @Test("switching the algorithm sends a hello and re-serves the view, and flips are rate-limited like viewports")
    func algorithmFlips() throws {
        var h = Harness(options: SessionOptions(viewportHz: 10))
        try h.turn([h.viewport(Self.europe, zoom: 6)])
        try h.settle()
        let before = h.firstBatchLatencies.count
        try h.turn([.settings(SettingsMessage(algorithm: .pcaTree))])
        #expect(h.last.first.map { if case .hello(let m) = $0 { m.algorithm == .pcaTree } else { false } } == true)
        // Flipping again at once: the answer is a hello, the re-serve waits for the limiter.
        try h.turn([
            .settings(SettingsMessage(algorithm: .hierarchical)), .settings(SettingsMessage(algorithm: .pcaTree)),
        ])
        #expect(h.last.allSatisfy { if case .hello = $0 { true } else { false } })
        try h.settle()
        #expect(h.firstBatchLatencies.count <= before + 2)
        #expect(Set(h.page.keys) == h.expected(Self.europe, zoom: 6, algorithm: .pcaTree))
    }

    @Test("past maxFeatures the nearest features are served and the done batch says how many there were")
    func caps() throws {
        var h = Harness(options: SessionOptions(maxFeatures: 25))
        let world = BBox(west: -180, south: -85, east: 180, north: 85)
        try h.turn([h.viewport(world, zoom: 2, width: 1024, height: 1024)])
        try h.settle()
        let done = h.batches.last { $0.done }
        #expect(h.batches.filter { !$0.done }.allSatisfy { $0.capped == nil })
        let available = h.expected(world, zoom: 2).count
        #expect(available > 25)
        #expect(h.page.count == 25)
        #expect(done?.capped == BatchMessage.Capped(limit: 25, available: available))
    }

    @Test("a bad frame gets an error naming the field, and the session keeps streaming")
    func badFrame() throws {
        var h = Harness()
        var actions = SessionActions<ManualClock>()
        let type = h.machine.received(
            Array(#"{"type":"viewport","seq":1,"bbox":[0,0,1,1],"zoom":31,"width":800,"height":600}"#.utf8),
            at: h.clock.now, actions: &actions)
        #expect(type == "invalid")
        #expect(
            try ServerMessage.decode(Array(actions.messages[0].payload))
                == .error(WireError(.invalidField, field: "zoom", message: "zoom must be between 0 and 24, got 31")))
        try h.turn([h.viewport(Self.europe, zoom: 6)])
        try h.settle()
        #expect(Set(h.page.keys) == h.expected(Self.europe, zoom: 6))
    }

    @Test("a ping is answered at once by a pong with its id, as text in both encodings")
    func pingIsAnsweredByPong() throws {
        for encoding in [WireEncoding.json, .binary] {
            var h = Harness(options: SessionOptions(encoding: encoding))
            _ = try h.opened()
            var actions = SessionActions<ManualClock>()
            let type = h.machine.received(Array(#"{"type":"ping","id":41}"#.utf8), at: h.clock.now, actions: &actions)
            #expect(type == "ping")
            #expect(actions.messages.count == 1)
            #expect(actions.messages.first?.binary == false)
            #expect(try ServerMessage.decode(Array(try #require(actions.messages.first).payload)) == .pong(id: 41))
        }
        // Streaming goes on around it.
        var h = Harness()
        try h.turn([h.viewport(Self.europe, zoom: 6), .ping(id: 42)])
        #expect(h.last.contains(.pong(id: 42)))
        try h.settle()
        #expect(Set(h.page.keys) == h.expected(Self.europe, zoom: 6))
    }

    @Test("an ack may wait for the next turn only once nothing waits on it")
    func acknowledgementsThatCanWait() throws {
        var h = Harness(options: SessionOptions(window: 1))
        h.acks = false
        try h.turn([h.viewport(Self.europe, zoom: 6)])
        let first = try #require(h.batches.first)
        #expect(!first.done)
        #expect(h.acknowledgementsCouldWait == [false], "the next batch waits for this ack")
        h.acks = true
        try h.turn([.ack(AckMessage(batch: first.batch, applied: first.add.count, ms: 2))])
        try h.settle()
        #expect(h.batches.last?.done == true)
        #expect(h.acknowledgementsCouldWait.last == true, "the plan is out: an ack only tunes the pace")
        // Two viewports at one instant: the second is held back for the limiter's tick.
        h.acks = false
        try h.turn([h.viewport(Self.europe, zoom: 7)])
        try h.turn([h.viewport(Self.europe, zoom: 8)])
        #expect(h.wakeAt != nil)
        #expect(h.acknowledgementsCouldWait.last == false, "a held-back viewport is flushed by the next ack")
    }

    @Test("a first batch held by a full window is measured as window wait, not as the server's time")
    func windowWait() throws {
        var h = Harness(options: SessionOptions(window: 1))
        h.acks = false
        let first = try h.turn([h.viewport(Self.europe, zoom: 6)])
        guard case .batch(let b1) = first.first else {
            Issue.record("no batch")
            return
        }
        try h.turn([h.viewport(BBox(west: 1.7, south: 42, east: 21.7, north: 52), zoom: 6)])
        #expect(h.last.isEmpty, "a batch came while the window was full")
        h.clock.advance(by: .milliseconds(400))
        h.acks = true
        try h.turn([.ack(AckMessage(batch: b1.batch, applied: b1.add.count, ms: 2))])
        #expect(h.windowWaits == [.milliseconds(400)])
        #expect(h.firstBatchLatencies.allSatisfy { $0 < .milliseconds(400) })
        #expect(h.firstBatchLatencies.count == 2)
    }
}

/// Sessions over data that changes while they watch.
@Suite("Session machine, live data")
struct LiveSessionMachineTests {
    /// The clusterer sessions share, replaced as the data changes.
    final class Shared: @unchecked Sendable {
        private let current: Mutex<any Clusterer>
        init(_ clusterer: any Clusterer) { current = Mutex(clusterer) }
        func get() -> any Clusterer { current.withLock { $0 } }
        func set(_ clusterer: any Clusterer) { current.withLock { $0 = clusterer } }
    }

    /// The index of the table's points as they are now, as a refresh publishes it.
    static func index(_ table: PointTable) throws -> any Clusterer {
        try ClustererFactory.make(.hierarchical, dataset: table.dataset)
    }

    /// The table's first point and a box about 2 km wide around it.
    static func aroundFirstPoint(_ table: PointTable) -> (lat: Double, lon: Double, box: BBox) {
        let (lat, lon) = (table.dataset.lat(0), table.dataset.lon(0))
        return (lat, lon, BBox(west: lon - 0.01, south: lat - 0.01, east: lon + 0.01, north: lat + 0.01))
    }

    static let europe = BBox(west: -5, south: 42, east: 15, north: 52)

    func features(_ clusterer: any Clusterer, _ box: BBox, zoom: Double) -> [FeatureID: Feature] {
        var out: [Feature] = []
        clusterer.features(in: box, zoom: zoom, into: &out)
        return Dictionary(out.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    }

    @Test("moves, inserts and deletes in view reach the page as updates, adds and removes carrying the version")
    func changesInView() throws {
        var table = PointTable(SyntheticGenerator(seed: 11).dataset(count: 20_000))
        let (lat, lon, box) = Self.aroundFirstPoint(table)
        table.apply(.upsert(.name("doomed"), lat: lat + 0.003, lon: lon, properties: [:]), version: 1)
        let shared = Shared(try Self.index(table))
        var h = SessionMachineTests.Harness(clusterers: { _ in shared.get() })
        try h.turn([h.viewport(box, zoom: 17)])
        try h.settle()
        let moved = FeatureID(table.dataset.ids[0])
        let doomed = FeatureID(table.id(of: .name("doomed"))!)
        #expect(h.page[moved] != nil && h.page[doomed] != nil)
        table.apply(.upsert(.number(UInt32(moved)), lat: lat + 0.001, lon: lon, properties: [:]), version: 2)
        table.apply(.delete(.name("doomed")), version: 3)
        table.apply(.upsert(.name("new"), lat: lat - 0.002, lon: lon, properties: ["line": "12"]), version: 4)
        shared.set(try Self.index(table))
        h.batches = []
        try h.dataChanged()
        try h.settle()
        let now = features(shared.get(), box, zoom: 17)
        #expect(Set(h.page.keys) == Set(now.keys))
        for (id, f) in now {
            let written = Coordinate(lat: f.lat, lon: f.lon).writtenAsJSON
            #expect(h.page[id]?.lat == written.lat && h.page[id]?.lon == written.lon)
        }
        #expect(!h.batches.isEmpty && h.batches.allSatisfy { $0.version == 4 })
        #expect(h.batches.flatMap(\.update).map(\.id) == [moved], "a move is an update of the same id")
        #expect(h.batches.flatMap(\.remove) == [doomed])
        #expect(h.batches.flatMap(\.add).map(\.key) == ["new"])
        #expect(h.page.values.first { $0.key == "new" }?.properties["line"] == "12")
    }

    @Test("a change reaches a moving viewer with its next view, and one that stopped 150 ms after its last")
    func refreshWaitsForTheNextView() throws {
        var table = PointTable(SyntheticGenerator(seed: 11).dataset(count: 20_000))
        let shared = Shared(try Self.index(table))
        var h = SessionMachineTests.Harness(clusterers: { _ in shared.get() })
        let (lat, lon, box) = Self.aroundFirstPoint(table)
        let moved = FeatureID(table.dataset.ids[0])
        func move(_ step: Int) throws {
            table.apply(
                .upsert(.number(UInt32(moved)), lat: lat + Double(step) * 0.001, lon: lon, properties: [:]),
                version: UInt64(step))
            shared.set(try Self.index(table))
        }
        try h.turn([h.viewport(box, zoom: 17)])
        try h.settle()

        // Moving: a change just after a view refreshes nothing; the next view, 100 ms on, brings it.
        try h.turn([h.viewport(box, zoom: 17)])
        try move(1)
        #expect(try h.dataChanged().isEmpty)
        h.clock.advance(by: .milliseconds(100))
        h.batches = []
        try h.turn([h.viewport(box, zoom: 17)])
        try h.settle()
        #expect(h.batches.flatMap(\.update).map(\.id) == [moved])
        #expect(!h.batches.isEmpty && h.batches.allSatisfy { $0.version == 1 })

        // Stopped: the refresh comes 1.5 / viewportHz after the last view, and not before. (A second
        // on, so the rate limiter serves that view at once rather than at a tick, with the new data.)
        h.clock.advance(by: .seconds(1))
        try h.turn([h.viewport(box, zoom: 17)])
        let lastView = h.clock.now
        try move(2)
        #expect(try h.dataChanged().isEmpty)
        h.clock.advance(to: lastView.advanced(by: .milliseconds(149)))
        try h.turn(tick: true)
        #expect(!h.batches.contains { $0.version == 2 })
        h.clock.advance(by: .milliseconds(1))
        try h.turn(tick: true)
        try h.settle()
        #expect(h.batches.contains { $0.version == 2 })
        #expect(h.page[moved]?.lat == Coordinate(lat: lat + 0.002, lon: lon).writtenAsJSON.lat)
    }

    /// A session shown Europe, and the shared index after a point was added far from it.
    func europeThenAFarChange() throws -> (SessionMachineTests.Harness, Shared) {
        var table = PointTable(SyntheticGenerator(seed: 11).dataset(count: 20_000))
        let shared = Shared(try Self.index(table))
        var h = SessionMachineTests.Harness(clusterers: { _ in shared.get() })
        try h.turn([h.viewport(Self.europe, zoom: 6)])
        try h.settle()
        table.apply(.upsert(.name("far away"), lat: -40, lon: 150, properties: [:]), version: 1)
        shared.set(try Self.index(table))
        h.batches = []
        return (h, shared)
    }

    @Test("a change outside the view sends nothing")
    func changeOutsideView() throws {
        let (session, shared) = try europeThenAFarChange()
        var h = session
        try h.dataChanged()
        try h.settle()
        #expect(h.batches.isEmpty)
        // A session opened now is told how many points there are now.
        var later = SessionMachineTests.Harness(clusterers: { _ in shared.get() })
        guard case .hello(let hello) = try later.opened().first else {
            Issue.record("no hello")
            return
        }
        #expect(hello.dataset.points == 20_001)
    }

    @Test("a viewer that moves to where data changed sees the changes it was never told of")
    func movesToUntoldChanges() throws {
        // A change far from the view: the server does not tell this session (no `dataChanged`).
        var (h, _) = try europeThenAFarChange()
        h.clock.advance(by: .seconds(1))
        try h.turn([h.viewport(BBox(west: 149.99, south: -40.01, east: 150.01, north: -39.99), zoom: 17)])
        try h.settle()
        #expect(h.page.values.contains { $0.key == "far away" })
        #expect(!h.batches.isEmpty && h.batches.allSatisfy { $0.version == 1 })
        // What the server compares with the newest version, to tell a session a refresh skipped.
        #expect(h.servedVersions == [0, 1])
    }

    @Test("a burst of changes while the window is full ends with the latest state only")
    func burstCoalesces() throws {
        var table = PointTable(SyntheticGenerator(seed: 11).dataset(count: 20_000))
        let shared = Shared(try Self.index(table))
        var h = SessionMachineTests.Harness(clusterers: { _ in shared.get() })
        let (lat, lon, box) = Self.aroundFirstPoint(table)
        try h.turn([h.viewport(box, zoom: 17)])
        try h.settle()
        h.acks = false
        let id = table.dataset.ids[0]
        for step in 1...20 {
            table.apply(
                .upsert(.number(id), lat: lat + Double(step) * 0.0001, lon: lon, properties: [:]), version: UInt64(step)
            )
            shared.set(try Self.index(table))
            try h.dataChanged()
        }
        h.acks = true
        for b in h.batches.suffix(4) {
            try h.turn([.ack(AckMessage(batch: b.batch, applied: 1, ms: 1))])
        }
        try h.settle()
        #expect(h.page[FeatureID(id)]?.lat == Coordinate(lat: lat + 20 * 0.0001, lon: 0).writtenAsJSON.lat)
        // Far fewer batches than changes: the window held them and only the latest state went out.
        #expect(h.batches.count < 20)
    }
}

extension SessionMachineTests {
    @Test("a machine lent planning memory each turn sends exactly what one keeping its own sends")
    func lentScratch() throws {
        var own = Harness()
        var lending = Harness()
        lending.lent = PlanScratch()
        var rng = SplitMix64(seed: 5)
        for step in 0..<12 {
            let west = -5 + Double(rng.next() % 100) / 10
            let south = 42 + Double(rng.next() % 60) / 10
            let box = BBox(west: west, south: south, east: west + 6, north: south + 3)
            let zoom = Double(4 + step % 5)
            try own.turn([own.viewport(box, zoom: zoom)])
            try own.settle()
            try lending.turn([lending.viewport(box, zoom: zoom)])
            try lending.settle()
        }
        #expect(!own.batches.isEmpty)
        #expect(lending.batches == own.batches)
        #expect(lending.page == own.page)
        #expect(lending.lent!.features.capacity > 0, "the turns planned in the lent memory, which came back")
    }
}
