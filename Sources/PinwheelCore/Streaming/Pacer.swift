/// Turns viewport targets into paced batches for one client, and owns what that client has.
///
/// A state machine over a ``PinwheelClock``: each mutating method returns one ``Action`` for the
/// server to carry out. After `.send`, write the batch and call ``poll()`` again; after
/// `.wait(until:)`, call ``poll()`` at that instant; after `.idle`, wait for the next ack or viewport.
///
/// Order of a viewport's changes: removes of features that left the view first; then adds and updates
/// nearest the viewport centre first (within a batch, in runs of 16 by id). A removed cluster that split travels with its nearest child's
/// add, and the removed children of a merge travel with their parent's add, so the screen never shows
/// a gap. A removed feature still in view with neither link (a zoom jump of several levels) goes with
/// the first add at least as far from the centre as itself: it vanishes as the new features reach it.
///
/// Batches hold about `pace × interval` markers (a split or merge group is never cut) and are spaced so
/// the client gets `pace` markers per millisecond; acks adapt `pace` through a low-pass filter to the
/// client's reported cost per marker. At most `window` batches are unacknowledged. A new target
/// drops the unsent rest of the previous one and is diffed against what was sent. The last batch for a
/// viewport has `done` set; it may be empty.
public struct Pacer<Clock: PinwheelClock>: Sendable {
    /// What the server should do next.
    public enum Action: Equatable, Sendable {
        /// Write this batch to the client, then call ``poll()``.
        case send(PacedBatch)
        /// Call ``poll()`` at this instant.
        case wait(until: Clock.Instant)
        /// Nothing to do until an ack or a new viewport.
        case idle
    }

    /// A batch sent and not yet acknowledged.
    public struct InFlight: Equatable, Sendable {
        public var number: UInt64
        public var markers: Int
        public var sentAt: Clock.Instant
    }

    /// A step of the plan: removes that travel together and, except for removes of features that left
    /// the view, the add or update they travel with.
    struct Unit: Sendable {
        var removes: Range<Int>
        var feature: Feature?
        var isUpdate: Bool
        var size: Int { removes.count + (feature == nil ? 0 : 1) }
    }

    public let clock: Clock
    public let options: PacerOptions
    /// What the client has: everything sent, as the client will have applied it.
    public private(set) var client: ClientFeatureSet
    /// Current rate, markers per millisecond.
    public private(set) var pace: Double
    /// The viewport being served; nil before the first.
    public private(set) var seq: UInt64?
    /// Batches sent and not yet acknowledged, oldest first.
    public private(set) var inFlight: [InFlight] = []
    /// True while `window` batches are unacknowledged: nothing more goes until an ack.
    public var isWindowFull: Bool { inFlight.count >= options.window }
    /// True once the current viewport's last batch is out (or before the first): an ack then only
    /// frees the window and tunes the pace, and sends nothing.
    public var isDone: Bool { doneSent }

    private var nextNumber: UInt64 = 1
    private var nextSendAt: Clock.Instant?
    private var doneSent = true
    private var units: [Unit] = []
    private var unitRemoves: [FeatureID] = []
    private var cursor = 0
    /// Memory for planning, kept for capacity; a server lends each turn its worker's instead.
    private var scratch = PacerScratch()

    /// - Parameter encoding: how the client receives features.
    public init(clock: Clock, options: PacerOptions = PacerOptions(), encoding: WireEncoding = .json) {
        self.clock = clock
        self.options = options
        client = ClientFeatureSet(encoding: encoding)
        pace = options.pace
    }

    /// Markers per batch at the current pace.
    public var batchSize: Int {
        max(1, min(options.maxBatch, Int((pace * options.interval.milliseconds).rounded())))
    }

    /// Markers planned for the current viewport and not yet sent.
    public var pendingMarkers: Int { units[cursor...].reduce(0) { $0 + $1.size } }

    /// Serves a new viewport: what the client should have now.
    /// - Parameters:
    ///   - seq: the viewport's seq, echoed in its batches.
    ///   - features: the features for the viewport.
    ///   - viewport: the viewport's box; adds nearer its centre go first, removes outside it go first.
    /// - Returns: the first action.
    public mutating func show(seq: UInt64, features: some Collection<Feature>, viewport: BBox) -> Action {
        scratch.diff.compute(from: client, to: features)
        return start(seq: seq, viewport: viewport)
    }

    /// Serves a viewport the view moved to within its zoom level, from what entered and left it; the client
    /// must have exactly the previous viewport's features (its last batch sent).
    /// - Returns: the first action.
    public mutating func show(seq: UInt64, entering: [Feature], leaving: [FeatureID], viewport: BBox) -> Action {
        scratch.diff.take(entering: entering, leaving: leaving)
        return start(seq: seq, viewport: viewport)
    }

    /// Plans the diff for a new viewport and sends its first batch.
    private mutating func start(seq: UInt64, viewport: BBox) -> Action {
        self.seq = seq
        plan(viewport: viewport)
        doneSent = false
        // The first batch of a new viewport is not held back by the spacing of the previous one.
        nextSendAt = nil
        return poll()
    }

    /// Drops the unsent rest of the viewport's difference, planned over an index the session no
    /// longer serves (another filter or algorithm): the next batch only says the viewport is done.
    /// What the client was sent stays what it has.
    public mutating func dropUnsent() {
        guard !doneSent else { return }
        units.removeSubrange(cursor...)
    }

    /// Takes what a reconnecting client still holds as what it has, before the first viewport: a held
    /// feature that `current` has with the same digest counts as that feature (nothing is re-sent for
    /// it); any other held id counts as a version the client must replace or remove.
    /// - Parameters:
    ///   - held: the ids and digests the client sent.
    ///   - current: the features the client's first viewport will be served.
    ///   - sameData: the client's data version is the current one; otherwise held points are
    ///     re-sent too, since a property change leaves their digest alone.
    ///   - encoding: how the client received what it holds, which decides the digest.
    public mutating func adopt(held: [HeldFeature], current: [Feature], sameData: Bool, encoding: WireEncoding) {
        var byID: [FeatureID: Int] = [:]
        byID.reserveCapacity(current.count)
        for (k, f) in current.enumerated() { byID[f.id] = k }
        for h in held {
            if let k = byID[h.id] {
                let f = current[k]
                if f.digest(encoding) == h.digest && (sameData || !f.isPoint) {
                    client.insert(f)
                } else {
                    // A version no feature has: the diff sends this one as an update.
                    client.insert(
                        id: h.id, version: ~f.version(client.encoding), parent: f.parent, lat: Float(f.lat),
                        lon: Float(f.lon))
                }
            } else {
                // Position unknown: NaN lies in no viewport, so its removal goes first.
                client.insert(id: h.id, version: 0, parent: nil, lat: .nan, lon: .nan)
            }
        }
    }

    /// Serves the current viewport again over changed data: what the client should have now, diffed
    /// against what was sent, keeping the current spacing between batches. Sends nothing when the
    /// client already has exactly that and the viewport's last batch went out.
    /// - Returns: the first action.
    public mutating func refresh(features: some Collection<Feature>, viewport: BBox) -> Action {
        guard seq != nil else { return .idle }
        scratch.diff.compute(from: client, to: features)
        if scratch.diff.isEmpty && doneSent { return .idle }
        plan(viewport: viewport)
        doneSent = false
        return poll()
    }

    /// Takes the client's ack: frees the window (an ack covers every earlier batch too) and adapts the pace.
    /// - Returns: the next action.
    public mutating func acknowledge(_ ack: AckMessage) -> Action {
        if let k = inFlight.firstIndex(where: { $0.number == ack.batch }) {
            inFlight.removeSubrange(...k)
            if ack.applied > 0 {
                let target = ack.ms > 0 ? options.clientShare * Double(ack.applied) / ack.ms : options.maxPace
                pace += options.smoothing * (target - pace)
                pace = min(max(pace, options.minPace), options.maxPace)
            }
        }
        return poll()
    }

    /// What to do now.
    public mutating func poll() -> Action {
        guard let seq, !doneSent else { return .idle }
        if isWindowFull { return .idle }
        let now = clock.now
        if let nextSendAt, now < nextSendAt { return .wait(until: nextSendAt) }

        let budget = batchSize
        // The units this batch takes, counted first so each of its arrays is allocated once.
        var end = cursor
        var markers = 0
        var (removes, adds, updates) = (0, 0, 0)
        while end < units.count {
            let unit = units[end]
            if markers > 0 && markers + unit.size > budget { break }
            removes += unit.removes.count
            if unit.feature != nil {
                if unit.isUpdate { updates += 1 } else { adds += 1 }
            }
            markers += unit.size
            end += 1
        }
        var batch = PacedBatch(seq: seq, number: nextNumber)
        batch.remove.reserveCapacity(removes)
        batch.add.reserveCapacity(adds)
        batch.update.reserveCapacity(updates)
        for unit in units[cursor..<end] {
            batch.remove.append(contentsOf: unitRemoves[unit.removes])
            if let f = unit.feature {
                if unit.isUpdate { batch.update.append(f) } else { batch.add.append(f) }
            }
        }
        cursor = end
        batch.done = cursor == units.count
        doneSent = batch.done
        Self.ascendInRuns(&batch.add)
        Self.ascendInRuns(&batch.update)
        batch.held = client.count
        batch.removeSlots = client.orderForRemoval(&batch.remove)
        if batch.done {
            // The plan holds whole features; between viewports a session holds none of it.
            units = []
            unitRemoves = []
            cursor = 0
        }
        client.apply(remove: batch.remove, add: batch.add, update: batch.update)
        inFlight.append(InFlight(number: nextNumber, markers: markers, sentAt: now))
        nextNumber += 1
        nextSendAt = now.advanced(by: .milliseconds(fractional: Double(markers) / pace))
        return .send(batch)
    }

    /// Orders a batch's features by id in runs of 16, nearest run first. The binary encoding writes
    /// each id as the difference from the one before, a byte shorter on average when ids ascend, and a
    /// page draws a run within one step of applying a batch (64 markers), so the nearest still come
    /// first. A pan's batches hold fewer than 16 features: each is wholly in id order.
    private static func ascendInRuns(_ features: inout [Feature]) {
        // Insertion sort within each run, in place: sorting a slice of the array would copy it.
        features.withUnsafeMutableBufferPointer { buffer in
            var run = 0
            while run < buffer.count {
                let end = min(buffer.count, run + 16)
                for k in run + 1..<end {
                    let f = buffer[k]
                    var j = k
                    while j > run && buffer[j - 1].id > f.id {
                        buffer[j] = buffer[j - 1]
                        j -= 1
                    }
                    buffer[j] = f
                }
                run = end
            }
        }
    }

    /// Lays the diff out as units: leavers' removes, then adds and updates by distance from the centre,
    /// each carrying the removes that must disappear with it.
    private mutating func plan(viewport: BBox) {
        units.removeAll(keepingCapacity: true)
        unitRemoves.removeAll(keepingCapacity: true)
        cursor = 0

        let distance = CentreDistance(viewport.center)
        // Adds have indices 0..<add.count, updates follow.
        scratch.order.removeAll(keepingCapacity: true)
        for (k, f) in scratch.diff.add.enumerated() {
            scratch.order.append((distance(lat: f.lat, lon: f.lon), f.id, k))
        }
        for (k, f) in scratch.diff.update.enumerated() {
            scratch.order.append((distance(lat: f.lat, lon: f.lon), f.id, scratch.diff.add.count + k))
        }
        scratch.order.sort { $0.key != $1.key ? $0.key < $1.key : $0.id < $1.id }

        // The add or update each remove travels with, by its index in the (sorted) removes; -1: none.
        let removes = scratch.diff.remove
        scratch.attachedTo.removeAll(keepingCapacity: true)
        scratch.attachedTo.append(contentsOf: repeatElement(-1, count: removes.count))
        scratch.addsByID.removeAll(keepingCapacity: true)
        // Split: a removed cluster goes with its nearest added child.
        for (position, entry) in scratch.order.enumerated() where entry.index < scratch.diff.add.count {
            let f = scratch.diff.add[entry.index]
            scratch.addsByID.append((f.id, position))
            if let parent = f.parent, parent != f.id,
                let r = Self.search(parent, count: removes.count, { removes[$0] }),
                scratch.attachedTo[r] < 0
            {
                scratch.attachedTo[r] = position
            }
        }
        scratch.addsByID.sort { $0.id < $1.id }
        // Merge: removed children go with their added parent.
        for r in removes.indices where scratch.attachedTo[r] < 0 {
            if let parent = client.parent(of: removes[r]), parent != removes[r],
                let k = Self.search(parent, count: scratch.addsByID.count, { scratch.addsByID[$0].id })
            {
                scratch.attachedTo[r] = scratch.addsByID[k].position
            }
        }
        // Still in view but unlinked: goes with the first add or update at least as far from the centre.
        if !scratch.order.isEmpty {
            for r in removes.indices where scratch.attachedTo[r] < 0 {
                guard let p = client.position(of: removes[r]), viewport.contains(lat: p.lat, lon: p.lon) else {
                    continue
                }
                let d = distance(lat: p.lat, lon: p.lon)
                var lo = 0
                var hi = scratch.order.count - 1
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if scratch.order[mid].key >= d { hi = mid } else { lo = mid + 1 }
                }
                scratch.attachedTo[r] = lo
            }
        }
        // A unit per leaver and per add or update, and each remove once: allocated at their size.
        let leavers = scratch.attachedTo.lazy.filter { $0 < 0 }.count
        units.reserveCapacity(leavers + scratch.order.count)
        unitRemoves.reserveCapacity(removes.count)
        // Leavers first, one unit each so batches can be cut anywhere among them.
        for r in removes.indices where scratch.attachedTo[r] < 0 {
            unitRemoves.append(removes[r])
            units.append(Unit(removes: unitRemoves.count - 1..<unitRemoves.count, feature: nil, isUpdate: false))
        }
        // Group attached removes by position (counting sort), then one unit per add or update.
        scratch.groupStarts.removeAll(keepingCapacity: true)
        scratch.groupStarts.append(contentsOf: repeatElement(0, count: scratch.order.count + 1))
        for p in scratch.attachedTo where p >= 0 { scratch.groupStarts[p + 1] += 1 }
        for p in 0..<scratch.order.count { scratch.groupStarts[p + 1] += scratch.groupStarts[p] }
        let base = unitRemoves.count
        unitRemoves.append(contentsOf: repeatElement(0, count: scratch.groupStarts[scratch.order.count]))
        scratch.fill.removeAll(keepingCapacity: true)
        scratch.fill.append(contentsOf: scratch.groupStarts)
        for (r, p) in scratch.attachedTo.enumerated() where p >= 0 {
            unitRemoves[base + scratch.fill[p]] = removes[r]
            scratch.fill[p] += 1
        }
        for (p, entry) in scratch.order.enumerated() {
            let isUpdate = entry.index >= scratch.diff.add.count
            let f = isUpdate ? scratch.diff.update[entry.index - scratch.diff.add.count] : scratch.diff.add[entry.index]
            units.append(
                Unit(
                    removes: base + scratch.groupStarts[p]..<base + scratch.groupStarts[p + 1], feature: f,
                    isUpdate: isUpdate))
        }
        // Scratch sized for an unusually large viewport is not kept, whoever holds it (a worker's
        // lent memory, or a machine's own). The plan itself is released once its last batch is sent.
        if scratch.order.capacity > Pacer.keptScratch || scratch.attachedTo.capacity > Pacer.keptScratch {
            scratch = PacerScratch()
        }
    }

    /// The index whose id is `id`, among `count` ids ascending by index; nil when absent.
    @inline(__always)
    private static func search(_ id: FeatureID, count: Int, _ idAt: (Int) -> FeatureID) -> Int? {
        var lo = 0
        var hi = count
        while lo < hi {
            let mid = (lo + hi) >> 1
            if idAt(mid) < id { lo = mid + 1 } else { hi = mid }
        }
        return lo < count && idAt(lo) == id ? lo : nil
    }

    /// Planning scratch up to this many entries is kept from one viewport to the next.
    static var keptScratch: Int { 4096 }

    /// Trades planning memory with `other`: a worker lends its own for a turn and takes it back after.
    mutating func swapScratch(_ other: inout PacerScratch) {
        swap(&scratch, &other)
    }
}

/// What the pacer needs only while it plans a viewport: the diff, the adds and updates in order of
/// distance, and what attaches removes to adds. Lookups are binary searches of sorted ids: a pan's
/// few dozen ids cost less that way than hashing each.
struct PacerScratch {
    var diff = ViewportDiff()
    var order: [(key: Double, id: FeatureID, index: Int)] = []
    /// Per remove, the position in `order` it travels with; -1: none.
    var attachedTo: [Int] = []
    /// The adds' ids and positions in `order`, by id.
    var addsByID: [(id: FeatureID, position: Int)] = []
    var groupStarts: [Int] = []
    /// Where the next remove of each group goes while they are laid out.
    var fill: [Int] = []
}
