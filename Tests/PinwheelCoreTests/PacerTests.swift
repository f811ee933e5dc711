import Testing

@testable import PinwheelCore

/// A 20°-square viewport centred on a point.
func box(_ lat: Double, _ lon: Double) -> BBox {
    BBox(west: lon - 10, south: lat - 10, east: lon + 10, north: lat + 10)
}

@Suite("Pacer")
struct PacerTests {
    typealias P = Pacer<ManualClock>

    /// Options with a fixed batch size of `batch` markers at pace 1 marker/ms.
    func options(batch: Int, window: Int = 4) -> PacerOptions {
        PacerOptions(pace: 1, window: window, interval: .milliseconds(Int64(batch)))
    }

    /// Sends everything for the current viewport, acking each batch instantly with zero cost reported
    /// as `ms`, advancing the clock through waits.
    func drain(_ pacer: inout P, _ clock: ManualClock, first: P.Action, ack: Bool = true) -> [PacedBatch] {
        var sent: [PacedBatch] = []
        var action = first
        while true {
            switch action {
            case .send(let b):
                sent.append(b)
                action = ack ? pacer.acknowledge(AckMessage(batch: b.number, applied: 0, ms: 0)) : pacer.poll()
            case .wait(let t):
                clock.advance(to: t)
                action = pacer.poll()
            case .idle:
                return sent
            }
        }
    }

    func batch(_ a: P.Action) -> PacedBatch? {
        if case .send(let b) = a { return b }
        return nil
    }

    @Test("removes of features that left the view go first, then adds nearest the centre first")
    func ordering() {
        let clock = ManualClock()
        var pacer = P(clock: clock, options: options(batch: 2))
        _ = drain(
            &pacer, clock,
            first: pacer.show(
                seq: 1, features: [pin(1, lat: 40, lon: 40), pin(2, lat: 41, lon: 41)],
                viewport: box(40, 40)))
        let target = [
            pin(10, lat: 3, lon: 3), pin(11, lat: 1, lon: 1), pin(12, lat: 0.1, lon: 0), pin(13, lat: 2, lon: 2),
        ]
        let sent = drain(&pacer, clock, first: pacer.show(seq: 2, features: target, viewport: box(0, 0)))
        // Removals from the highest slot down: 2 was added after 1.
        #expect(sent.map(\.remove) == [[2, 1], [], []])
        // The nearest two (12, 11) first, then 13 and 10; within a batch by id.
        #expect(sent.map { $0.add.map(\.id) } == [[], [11, 12], [10, 13]])
        #expect(sent.map(\.seq) == [2, 2, 2])
        #expect(sent.map(\.done) == [false, false, true])
        #expect(versions(pacer.client) == versions(target))
    }

    @Test("within a batch, features come by id in runs of 16, the run nearest the centre first")
    func idRuns() {
        let clock = ManualClock()
        var pacer = P(clock: clock, options: options(batch: 100))
        // Farther from the centre as the id falls: by distance, 40, 39, … 1.
        let target = (1...40).map { k in pin(UInt64(k), lat: Double(41 - k) * 0.01, lon: 0) }
        let sent = drain(&pacer, clock, first: pacer.show(seq: 1, features: target, viewport: box(0, 0)))
        #expect(sent.count == 1)
        #expect(sent.first?.add.map(\.id) == Array(25...40) + Array(9...24) + Array(1...8))
    }

    @Test("a split: the parent's removal travels with its nearest child's add")
    func split() {
        let clock = ManualClock()
        var pacer = P(clock: clock, options: options(batch: 1))
        _ = drain(
            &pacer, clock,
            first: pacer.show(
                seq: 1, features: [pin(100, lat: 1, lon: 1, count: 3, parent: 500), pin(7, lat: 30, lon: 30)],
                viewport: box(0, 0)))
        let children = [
            pin(1, lat: 2, lon: 2, parent: 100), pin(2, lat: 0.5, lon: 0.5, parent: 100),
            pin(3, lat: 1, lon: 1, parent: 100),
        ]
        let sent = drain(&pacer, clock, first: pacer.show(seq: 2, features: children, viewport: box(0, 0)))
        // The leaver first; then the parent with child 2 (nearest) although that exceeds one marker.
        #expect(sent.count == 4)
        #expect(sent[0].remove == [7] && sent[0].add.isEmpty)
        #expect(sent[1].remove == [100] && sent[1].add.map(\.id) == [2])
        #expect(sent[2].add.map(\.id) == [3] && sent[3].add.map(\.id) == [1])
        #expect(sent[3].done)
    }

    @Test("a removed feature still in view with no parent link vanishes when the adds reach its distance")
    func zoomJump() {
        let clock = ManualClock()
        var pacer = P(clock: clock, options: options(batch: 1))
        _ = drain(
            &pacer, clock,
            first: pacer.show(
                seq: 1, features: [pin(100, lat: 5, count: 40, parent: 900), pin(7, lat: 30, lon: 30)],
                viewport: box(0, 0)))
        // Three zoom levels finer: the new features' parents are not on screen.
        let target = [
            pin(1, lat: 1, parent: 50), pin(2, lat: 3, parent: 50), pin(3, lat: 6, parent: 51),
            pin(4, lat: 8, parent: 51),
        ]
        let sent = drain(&pacer, clock, first: pacer.show(seq: 2, features: target, viewport: box(0, 0)))
        #expect(sent.map(\.remove) == [[7], [], [], [100], []])
        #expect(sent.map { $0.add.map(\.id) } == [[], [1], [2], [3], [4]])
        // A feature in view that nothing replaces still goes, with the last add at the latest.
        _ = drain(
            &pacer, clock,
            first: pacer.show(
                seq: 3, features: [pin(1, lat: 1, parent: 50), pin(9, lat: 0.5)],
                viewport: box(0, 0)))
        #expect(versions(pacer.client) == versions([pin(1, lat: 1, parent: 50), pin(9, lat: 0.5)]))
    }

    @Test("a merge: the children's removals travel with the parent's add")
    func merge() {
        let clock = ManualClock()
        var pacer = P(clock: clock, options: options(batch: 1))
        let children = [
            pin(1, lat: 2, lon: 2, parent: 100), pin(2, lat: 0.5, lon: 0.5, parent: 100),
            pin(3, lat: 1, lon: 1, parent: 100), pin(4, lat: 5, lon: 5, parent: 200),
            pin(5, lat: 6, lon: 6, parent: 200),
        ]
        _ = drain(&pacer, clock, first: pacer.show(seq: 1, features: children, viewport: box(0, 0)))
        let parents = [
            pin(100, lat: 1, lon: 1, count: 3, parent: 900), pin(200, lat: 5.5, lon: 5.5, count: 2, parent: 900),
        ]
        let sent = drain(&pacer, clock, first: pacer.show(seq: 2, features: parents, viewport: box(0, 0)))
        #expect(sent.count == 2)
        #expect(sent[0].add.map(\.id) == [100] && Set(sent[0].remove) == [1, 2, 3])
        #expect(sent[1].add.map(\.id) == [200] && Set(sent[1].remove) == [4, 5] && sent[1].done)
    }

    @Test("at most `window` batches are unacknowledged; an ack opens the window again")
    func window() {
        let clock = ManualClock()
        var pacer = P(clock: clock, options: options(batch: 1, window: 3))
        let target = (1...10).map { pin(FeatureID($0), lat: Double($0)) }
        let sent = drain(
            &pacer, clock, first: pacer.show(seq: 1, features: target, viewport: box(0, 0)),
            ack: false)
        #expect(sent.map(\.number) == [1, 2, 3])
        #expect(pacer.inFlight.count == 3)
        #expect(pacer.poll() == .idle)
        // Acking batch 2 also acknowledges batch 1.
        let next = pacer.acknowledge(AckMessage(batch: 2, applied: 1, ms: 2))
        #expect(pacer.inFlight.map(\.number) == [3])
        guard case .wait = next else {
            Issue.record("expected to wait for the pace, got \(next)")
            return
        }
        let rest = drain(&pacer, clock, first: next, ack: false)
        #expect(rest.map(\.number) == [4, 5])
        // An unknown batch number changes nothing.
        #expect(pacer.acknowledge(AckMessage(batch: 99, applied: 1, ms: 1)) == .idle)
        #expect(pacer.inFlight.count == 3)
    }

    @Test("batches are spaced so the client gets `pace` markers per millisecond")
    func spacing() {
        let clock = ManualClock()
        var pacer = P(clock: clock, options: PacerOptions(pace: 0.5, window: 100, interval: .milliseconds(20)))
        #expect(pacer.batchSize == 10)
        let start = clock.now
        let first = pacer.show(seq: 1, features: (1...30).map { pin(FeatureID($0)) }, viewport: box(0, 0))
        #expect(batch(first)?.add.count == 10)
        #expect(pacer.poll() == .wait(until: start.advanced(by: .milliseconds(20))))
        clock.advance(by: .milliseconds(20))
        #expect(batch(pacer.poll())?.add.count == 10)
        #expect(pacer.poll() == .wait(until: start.advanced(by: .milliseconds(40))))
    }

    @Test("a new target mid-flush drops the unsent rest and diffs against what was sent")
    func cancellation() {
        let clock = ManualClock()
        var pacer = P(clock: clock, options: options(batch: 2))
        let first = (1...10).map { pin(FeatureID($0), lat: Double($0)) }
        guard let b1 = batch(pacer.show(seq: 1, features: first, viewport: box(0, 0))) else {
            Issue.record("no first batch")
            return
        }
        #expect(b1.add.map(\.id) == [1, 2] && !b1.done)
        // The client has 1 and 2. The new target keeps 2 and 9 (never sent) and adds 20.
        let second = [pin(2, lat: 2), pin(9, lat: 9), pin(20, lat: 20)]
        let sent = drain(&pacer, clock, first: pacer.show(seq: 2, features: second, viewport: box(0, 0)))
        #expect(sent.allSatisfy { $0.seq == 2 })
        #expect(sent.flatMap(\.remove) == [1])
        #expect(sent.flatMap { $0.add.map(\.id) } == [9, 20])
        #expect(sent.last?.done == true)
        #expect(versions(pacer.client) == versions(second))
        #expect(sent.first?.number == 2)
    }

    @Test("the last batch is marked done; a viewport with nothing new gets one empty done batch")
    func done() {
        let clock = ManualClock()
        var pacer = P(clock: clock, options: options(batch: 5))
        let target = (1...3).map { pin(FeatureID($0)) }
        let sent = drain(&pacer, clock, first: pacer.show(seq: 1, features: target, viewport: box(0, 0)))
        #expect(sent.count == 1 && sent[0].done && sent[0].add.count == 3)
        let again = drain(&pacer, clock, first: pacer.show(seq: 2, features: target, viewport: box(0, 0)))
        var empty = PacedBatch(seq: 2, number: 2, done: true)
        empty.held = 3
        #expect(again == [empty])
        #expect(pacer.poll() == .idle)
    }

    @Test("removals name their slots among what the client holds: a mirror of the slots finds every id")
    func removalSlots() {
        let clock = ManualClock()
        var pacer = P(clock: clock, options: options(batch: 7))
        var rng = SeededRandom(seed: 11)
        // The client's side: ids by slot, changed as the binary encoding's decoder changes them.
        var mirror: [FeatureID] = []
        for seq in UInt64(1)...40 {
            let target = (0..<Int.random(in: 0...40, using: &rng)).map { _ in
                pin(FeatureID.random(in: 0...60, using: &rng), lat: .random(in: -9...9, using: &rng), lon: 0)
            }
            var unique: [FeatureID: Feature] = [:]
            for f in target { unique[f.id] = f }
            let features = unique.values.sorted { $0.id < $1.id }
            for b in drain(&pacer, clock, first: pacer.show(seq: seq, features: features, viewport: box(0, 0))) {
                #expect(b.held == mirror.count)
                #expect(b.removeSlots == b.removeSlots.sorted(by: >))
                #expect(b.removeSlots.map { mirror[Int($0)] } == b.remove)
                for slot in b.removeSlots.map(Int.init) {
                    let last = mirror.removeLast()
                    if slot < mirror.count { mirror[slot] = last }
                }
                for f in b.update + b.add where !mirror.contains(f.id) { mirror.append(f.id) }
            }
            #expect(mirror == pacer.client.ids)
        }
    }

    @Test("a viewport larger than the kept scratch streams completely, and the next one diffs against it")
    func largeViewport() {
        let clock = ManualClock()
        var pacer = P(clock: clock, options: options(batch: 500))
        let big = (0..<6000).map { pin(FeatureID($0), lat: Double($0 % 80) / 10, lon: Double($0 / 80) / 10) }
        let sent = drain(&pacer, clock, first: pacer.show(seq: 1, features: big, viewport: box(4, 4)))
        #expect(sent.count == 12 && sent.last?.done == true)
        #expect(versions(pacer.client) == versions(big))
        let next = Array(big[3000...]) + [pin(9999, lat: 4, lon: 4)]
        let more = drain(&pacer, clock, first: pacer.show(seq: 2, features: next, viewport: box(4, 4)))
        #expect(more.flatMap(\.remove).count == 3000 && more.flatMap(\.add).map(\.id) == [9999])
        #expect(versions(pacer.client) == versions(next))
    }

    @Test("nothing is sent before the first viewport")
    func beforeFirst() {
        var pacer = P(clock: ManualClock())
        #expect(pacer.poll() == .idle)
        #expect(pacer.acknowledge(AckMessage(batch: 1, applied: 1, ms: 1)) == .idle)
    }

    @Test("the pace follows the client's reported cost through a low-pass filter, within bounds")
    func adaptiveRate() {
        let clock = ManualClock()
        var pacer = P(clock: clock, options: PacerOptions(pace: 0.5, window: 1000, interval: .milliseconds(50)))
        _ = pacer.show(seq: 1, features: (1...20000).map { pin(FeatureID($0)) }, viewport: box(0, 0))
        #expect(pacer.batchSize == 25)
        // A fast client: 100 markers in 10 ms → 0.1 ms per marker → target 0.5 / 0.1 = 5 markers/ms.
        _ = pacer.acknowledge(AckMessage(batch: 1, applied: 100, ms: 10))
        #expect(abs(pacer.pace - (0.5 + 0.3 * 4.5)) < 1e-12)
        for _ in 0..<40 {
            clock.advance(by: .seconds(1))
            if case .send(let b) = pacer.poll() {
                _ = pacer.acknowledge(AckMessage(batch: b.number, applied: 100, ms: 10))
            }
        }
        #expect(abs(pacer.pace - 5) < 0.01)
        #expect(pacer.batchSize == 250)
        // A slow client: 10 markers in 1000 ms pulls the pace down to its floor.
        for _ in 0..<60 {
            clock.advance(by: .seconds(1))
            if case .send(let b) = pacer.poll() {
                _ = pacer.acknowledge(AckMessage(batch: b.number, applied: 10, ms: 1000))
            }
        }
        #expect(pacer.pace == pacer.options.minPace)
        #expect(pacer.batchSize == 3)
        // An empty batch's ack (nothing applied) says nothing about cost.
        let before = pacer.pace
        clock.advance(by: .seconds(10))
        if case .send(let b) = pacer.poll() {
            _ = pacer.acknowledge(AckMessage(batch: b.number, applied: 0, ms: 3))
        }
        #expect(pacer.pace == before)
    }

    @Test("random viewports, acks and clock steps always leave the client with exactly what was sent")
    func property() {
        for seed in 0..<100 as Range<UInt64> {
            var rng = SeededRandom(seed: seed)
            let clock = ManualClock()
            var pacer = P(
                clock: clock,
                options: PacerOptions(
                    pace: Double(rng.next() % 20 + 1) / 10,
                    window: Int(rng.next() % 4) + 1,
                    interval: .milliseconds(Int64(rng.next() % 40) + 5)))
            var screen = ClientFeatureSet()  // the simulated page, applying batches in order
            var lastTarget: [Feature] = []
            var unacked: [PacedBatch] = []
            var action = P.Action.idle
            for step in 0..<200 {
                switch action {
                case .send(let b):
                    #expect(b.remove.allSatisfy { screen.contains($0) }, "seed \(seed) step \(step)")
                    #expect(b.add.allSatisfy { !screen.contains($0.id) }, "seed \(seed) step \(step)")
                    #expect(b.update.allSatisfy { screen.contains($0.id) }, "seed \(seed) step \(step)")
                    screen.apply(remove: b.remove, add: b.add, update: b.update)
                    unacked.append(b)
                    action = pacer.poll()
                    continue
                case .wait(let t):
                    if rng.next() % 2 == 0 {
                        clock.advance(to: t)
                        action = pacer.poll()
                        continue
                    }
                case .idle:
                    break
                }
                switch rng.next() % 3 {
                case 0:
                    let pool = Int(rng.next() % 60) + 1
                    lastTarget = (0..<pool).compactMap { id in
                        rng.next() % 2 == 0
                            ? nil
                            : pin(
                                FeatureID(id), lat: Double(rng.next() % 5), lon: Double(rng.next() % 5),
                                count: UInt32(rng.next() % 3 + 1), parent: FeatureID(100 + id / 4))
                    }
                    action = pacer.show(
                        seq: UInt64(step), features: lastTarget,
                        viewport: box(Double(rng.next() % 5), 0))
                case 1 where !unacked.isEmpty:
                    let b = unacked.removeFirst()
                    action = pacer.acknowledge(
                        AckMessage(batch: b.number, applied: b.markerCount, ms: Double(rng.next() % 20)))
                default:
                    clock.advance(by: .milliseconds(Int64(rng.next() % 30)))
                    action = pacer.poll()
                }
                // A returned batch is already in the pacer's record; compare once the page has it.
                if case .send = action {
                } else {
                    #expect(versions(screen) == versions(pacer.client), "seed \(seed) step \(step)")
                }
                #expect(pacer.inFlight.count <= pacer.options.window)
            }
            // Finish: ack everything and let the pacer flush; the page then shows exactly the last target.
            var rounds = 0
            while rounds < 10_000 {
                rounds += 1
                switch action {
                case .send(let b):
                    screen.apply(remove: b.remove, add: b.add, update: b.update)
                    action = pacer.acknowledge(AckMessage(batch: b.number, applied: b.markerCount, ms: 1))
                case .wait(let t):
                    clock.advance(to: t)
                    action = pacer.poll()
                case .idle:
                    if let b = unacked.popLast() {
                        unacked.removeAll()
                        action = pacer.acknowledge(AckMessage(batch: b.number, applied: 0, ms: 0))
                    } else {
                        rounds = .max
                    }
                }
            }
            #expect(versions(screen) == versions(lastTarget), "seed \(seed)")
        }
    }
}
