import Foundation
import Synchronization
import Testing

@testable import PinwheelCore

/// A pan or zoom within one zoom level served from what enters and leaves the view, against whole
/// queries.
@Suite("Moved views")
struct ViewMovedTests {
    static let index = try! ClusterIndex(dataset: ClusterIndexTests.dataset(seed: 3, count: 20_000))

    /// The same points after changes, compacted: a live index over a fresh build of them, with no
    /// changes laid over it, whose points carry revisions: points moved and deleted, and points added
    /// where the session of ``sessionSendsTheSameBatches(index:)`` walks.
    static let compacted: LiveClusterIndex = {
        var table = PointTable(ClusterIndexTests.dataset(seed: 3, count: 20_000))
        var rng = SplitMix64(seed: 8)
        for version in 1...4_000 {
            let row = Int(rng.next() % UInt64(table.count))
            let id = PointKey.number(table.dataset.ids[row])
            let change: Change =
                switch version % 4 {
                case 0: .delete(id)
                case 1: .upsert(id, lat: table.dataset.lat(row) + 0.01, lon: table.dataset.lon(row), properties: [:])
                default:
                    .upsert(
                        .name("new-\(version)"), lat: 48 + (rng.nextUnit() - 0.5) * 8,
                        lon: 10 + (rng.nextUnit() - 0.5) * 16, properties: ["v": .string("\(version)")])
                }
            table.apply(change, version: UInt64(version))
        }
        return LiveClusterIndex(base: try! ClusterIndex(dataset: table.dataset))
    }()

    /// A live index with a delta laid over its build: points moved, added (some on top of others)
    /// and deleted, as the live floor's producer changes them.
    static let changed = try! LiveClusterIndexTests.overlaid(seed: 5, base: 20_000, changes: 4_000).live
    /// The same history with every level's adjustments in persistent maps (the fine levels' way).
    static let changedMapped = try! LiveClusterIndexTests.overlaid(
        seed: 5, base: 20_000, changes: 4_000, largestDenseLevel: 0
    ).live

    /// The indexes moves are read from: a build, and live indexes with changes laid over theirs.
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case build, live, liveMapped
        var index: any Clusterer {
            switch self {
            case .build: ViewMovedTests.index
            case .live: ViewMovedTests.changed
            case .liveMapped: ViewMovedTests.changedMapped
            }
        }
        var testDescription: String { rawValue }
    }

    /// The index answering only whole queries, or answering moves and counting those it answered.
    final class Forwarding: Clusterer {
        let base: any Clusterer
        let answersMoves: Bool
        let movesAnswered = Mutex(0)

        init(_ base: any Clusterer, answersMoves: Bool) {
            self.base = base
            self.answersMoves = answersMoves
        }

        var algorithm: Algorithm { base.algorithm }
        var dataset: Dataset { base.dataset }
        var aggregates: [Aggregate] { base.aggregates }
        func features(in bbox: BBox, zoom: Double, into out: inout [Feature]) {
            base.features(in: bbox, zoom: zoom, into: &out)
        }
        func viewMoved(
            from old: BBox, zoom oldZoom: Double, to new: BBox, zoom newZoom: Double, entering: inout [Feature],
            leaving: inout [FeatureID]
        ) -> Bool {
            guard answersMoves else {
                entering.removeAll()
                leaving.removeAll()
                return false
            }
            let answered = base.viewMoved(
                from: old, zoom: oldZoom, to: new, zoom: newZoom, entering: &entering, leaving: &leaving)
            if answered { movesAnswered.withLock { $0 += 1 } }
            return answered
        }
        func children(of id: FeatureID) -> [Feature]? { base.children(of: id) }
        func leaves(of id: FeatureID, limit: Int, offset: Int) -> [Feature]? {
            base.leaves(of: id, limit: limit, offset: offset)
        }
        func expansion(of id: FeatureID, zoom: Double) -> Expansion? { base.expansion(of: id, zoom: zoom) }
        func aggregateValues(of feature: Feature) -> ArraySlice<Double> { base.aggregateValues(of: feature) }
    }

    static func byID(_ features: [Feature]) -> [FeatureID: Feature] {
        Dictionary(features.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// A box about `span` degrees wide around `centre`, moved by a fraction of its size and possibly
    /// resized; nil when either box would cross the antimeridian or leave the latitudes shown.
    static func boxes(_ rng: inout SplitMix64, centre: (lon: Double, lat: Double), span: Double) -> (BBox, BBox)? {
        let (w, h) = (span, span / 2)
        let old = BBox(
            west: centre.lon - w / 2, south: centre.lat - h / 2, east: centre.lon + w / 2, north: centre.lat + h / 2)
        let dx = (rng.nextUnit() * 2.4 - 1.2) * w
        let dy = (rng.nextUnit() * 2.4 - 1.2) * h
        let grow = rng.next() % 4 == 0 ? 0.5 + rng.nextUnit() : 1
        let new = BBox(
            west: old.west + dx, south: old.south + dy, east: old.west + dx + w * grow, north: old.south + dy + h * grow
        )
        for b in [old, new] where b.west < -180 || b.east > 180 || b.south < -85 || b.north > 85 { return nil }
        return (old, new)
    }

    @Test(
        "a view moved within its zoom level gains and loses exactly what two whole queries of it differ by",
        arguments: Kind.allCases)
    func differenceOfWholeQueries(kind: Kind) throws {
        let index = kind.index
        var rng = SplitMix64(seed: 9)
        var entering: [Feature] = []
        var leaving: [FeatureID] = []
        var checked = 0
        var nonEmpty = 0
        var jumps = 0
        var otherLevels = 0
        var zoomsWithin = 0
        for trial in 0..<600 {
            let zoom = Double(rng.next() % 19) + (trial % 3 == 0 ? 0.5 : 0)
            // Now and then the zoom moves too, within its level or out of it (as a zoom animates).
            let newZoom = trial % 4 == 1 ? max(0, zoom + rng.nextUnit() * 1.6 - 0.8) : zoom
            let row = Int(rng.next() % UInt64(index.dataset.count))
            let centre = (lon: index.dataset.lon(row), lat: index.dataset.lat(row))
            guard let (old, new) = Self.boxes(&rng, centre: centre, span: 400 / pow(2, zoom)) else { continue }
            // A jump to a box sharing nothing, or another level, is left to a whole query.
            let overlaps =
                old.west <= new.east && new.west <= old.east && old.south <= new.north && new.south <= old.north
            let sameLevel = floor(zoom) == floor(newZoom)
            #expect(
                index.viewMoved(from: old, zoom: zoom, to: new, zoom: newZoom, entering: &entering, leaving: &leaving)
                    == (overlaps && sameLevel))
            guard overlaps && sameLevel else {
                #expect(entering.isEmpty && leaving.isEmpty)
                if sameLevel { jumps += 1 } else { otherLevels += 1 }
                continue
            }
            if zoom != newZoom { zoomsWithin += 1 }
            var whole: [Feature] = []
            index.features(in: old, zoom: zoom, into: &whole)
            let before = Self.byID(whole)
            index.features(in: new, zoom: newZoom, into: &whole)
            let after = Self.byID(whole)
            // What both views show is the same feature in both: that is what lets a move skip it.
            for (id, f) in after { if let g = before[id] { #expect(f == g) } }
            #expect(entering.count == Set(entering.map(\.id)).count, "an entering feature read twice")
            #expect(Self.byID(entering) == after.filter { before[$0.key] == nil })
            #expect(leaving.count == Set(leaving).count, "a leaving id read twice")
            #expect(Set(leaving) == Set(before.keys.filter { after[$0] == nil }))
            checked += 1
            if !entering.isEmpty && !leaving.isEmpty && before.count > entering.count { nonEmpty += 1 }
        }
        #expect(checked > 300 && jumps > 50 && otherLevels > 20 && zoomsWithin > 20)
        #expect(nonEmpty > 100, "many trials move a view that keeps part of its features")
    }

    @Test("a live index's moves bring the points changed since its build, and take away those deleted")
    func liveIndexMovesCarryChanges() throws {
        let live = Self.changed
        var (entering, leaving): ([Feature], [FeatureID]) = ([], [])
        var (added, removed) = (0, 0)
        var rng = SplitMix64(seed: 12)
        let firstAdded = live.changedRows!.start
        let changedPoints = Array(live.delta.added.values)
        for _ in 0..<400 {
            let zoom = Double(10 + rng.next() % 9)
            let point = changedPoints[Int(rng.next() % UInt64(changedPoints.count))].position
            let centre = (lon: point.lon, lat: point.lat)
            // From a box moved away to the box around the changed point.
            guard let (new, old) = Self.boxes(&rng, centre: centre, span: 400 / pow(2, zoom)),
                live.viewMoved(from: old, zoom: zoom, to: new, zoom: zoom, entering: &entering, leaving: &leaving)
            else { continue }
            added += entering.filter { $0.row == firstAdded }.count
            removed +=
                entering.filter { $0.isPoint && $0.row < firstAdded && live.delta.removedRows.contains(Int($0.row)) }
                .count
        }
        #expect(added > 100, "points the delta added enter moved views: \(added)")
        #expect(removed == 0, "no changed base point enters where it was")
    }

    @Test("a box across the antimeridian is left to whole queries")
    func antimeridian() {
        var entering: [Feature] = []
        var leaving: [FeatureID] = []
        let across = BBox(west: 170, south: -10, east: -170, north: 10)
        let near = BBox(west: 160, south: -10, east: 179, north: 10)
        #expect(!Self.index.viewMoved(from: near, zoom: 4, to: across, zoom: 4, entering: &entering, leaving: &leaving))
        #expect(!Self.index.viewMoved(from: across, zoom: 4, to: near, zoom: 4, entering: &entering, leaving: &leaving))
        #expect(entering.isEmpty && leaving.isEmpty)
    }

    @Test(
        "a session serving pans and zooms as moved views sends exactly the batches of one querying whole views",
        arguments: ["build", "compacted", "live"])
    func sessionSendsTheSameBatches(index name: String) throws {
        let index: any Clusterer =
            switch name {
            case "build": Self.index
            case "compacted": Self.compacted
            default: Self.changed
            }
        let moving = Forwarding(index, answersMoves: true)
        let whole = Forwarding(index, answersMoves: false)
        // A small cap, so some views are capped and served whole.
        let options = SessionOptions(maxFeatures: 400)
        var a = SessionMachineTests.Harness(options: options, clusterers: { _ in moving })
        var b = SessionMachineTests.Harness(options: options, clusterers: { _ in whole })
        var rng = SplitMix64(seed: 21)
        var zoom = 6.0
        var centre = (lon: 10.0, lat: 48.0)
        for step in 0..<300 {
            // Zoom animations a level in or out over three views, and a jump of levels now and then.
            if step % 40 == 39 { zoom = Double(3 + rng.next() % 12) }
            if step % 10 >= 7 { zoom += step % 20 < 10 ? 1.0 / 3 : -1.0 / 3 }
            let span = 400 / pow(2, zoom)
            centre.lon = min(max(centre.lon + (rng.nextUnit() - 0.5) * span / 4, -170), 170)
            centre.lat = min(max(centre.lat + (rng.nextUnit() - 0.5) * span / 8, -70), 70)
            let box = BBox(
                west: centre.lon - span / 2, south: centre.lat - span / 4, east: centre.lon + span / 2,
                north: centre.lat + span / 4)
            // Now and then the page is slow to acknowledge: the next view finds the plan unfinished.
            let slow = step % 7 == 3
            a.acks = !slow
            b.acks = !slow
            try a.turn([a.viewport(box, zoom: zoom)])
            try b.turn([b.viewport(box, zoom: zoom)])
            a.acks = true
            b.acks = true
            a.clock.advance(by: .milliseconds(100))
            b.clock.advance(by: .milliseconds(100))
            if !slow {
                try a.settle()
                try b.settle()
            }
            if step % 20 == 19 && !slow {
                // Served again, the view sends nothing: what moves brought carries its points' revisions.
                let sent = a.batches.count
                try a.dataChanged()
                try b.dataChanged()
                try a.settle()
                try b.settle()
                #expect(
                    a.batches.dropFirst(sent).allSatisfy { $0.add.isEmpty && $0.update.isEmpty && $0.remove.isEmpty })
            }
        }
        try a.settle()
        try b.settle()
        #expect(a.batches == b.batches)
        #expect(a.page == b.page)
        #expect(moving.movesAnswered.withLock { $0 } > 150, "most views were served as moves")
        #expect(whole.movesAnswered.withLock { $0 } == 0)
    }
}
