/// Opening features: children, leaves, expansion and aggregate values, all found from a feature id.
extension ClusterIndex {
    public func children(of id: FeatureID) -> [Feature]? {
        if id >> 32 == 0 { return row(ofID: id) == nil ? nil : [] }
        guard let (li, item) = clusterItem(id) else { return nil }
        let level = levels[li]
        var out: [Feature] = []
        var scratch = SpreadScratch()
        withContext(level: li + 1, spreadZoom: Double(levels[li + 1].zoom)) { context in
            for c in level.childOrder[Int(level.firstChild[item])..<Int(level.firstChild[item + 1])] {
                emit(context, item: Int(c), scratch: &scratch, into: &out)
            }
        }
        return out
    }

    public func leaves(of id: FeatureID, limit: Int, offset: Int) -> [Feature]? {
        if id >> 32 == 0 {
            guard let row = row(ofID: id) else { return nil }
            return offset <= 0 && limit > 0 ? [leaf(row: row)] : []
        }
        guard let start = clusterItem(id) else { return nil }
        return leaves(level: start.li, item: start.item, limit: limit, offset: offset)
    }

    /// The points under item `item` of level li, depth-first in stored order, `offset` skipped and at
    /// most `limit`.
    func leaves(level li: Int, item: Int, limit: Int, offset: Int) -> [Feature] {
        var out: [Feature] = []
        var skip = max(0, offset)
        // Depth-first over child lists, children in stored order, skipping whole subtrees by count.
        var stack: [(li: Int, item: Int)] = [(li, item)]
        while let (li, item) = stack.popLast(), out.count < limit {
            let level = levels[li]
            let meta = level.meta[item]
            let count = Int(ItemMeta.count(meta))
            if skip >= count {
                skip -= count
                continue
            }
            if !ItemMeta.isCluster(meta) {
                // A point or group, possibly passed up unchanged.
                let payload = Int(ItemMeta.payload(meta))
                let rows = ItemMeta.tag(meta) == 0 ? [Int32(payload)] : Array(groups.rows(of: payload))
                for row in rows.dropFirst(skip) where out.count < limit { out.append(leaf(row: Int(row))) }
                skip = 0
                continue
            }
            let children = level.childOrder[Int(level.firstChild[item])..<Int(level.firstChild[item + 1])]
            for c in children.reversed() { stack.append((li + 1, Int(c))) }
        }
        return out
    }

    public func expansion(of id: FeatureID, zoom: Double) -> Expansion? {
        if id >> 32 != 0 {
            guard let (li, _) = clusterItem(id) else { return nil }
            return .zoom(Double(levels[li].zoom + 1))
        }
        guard let row = row(ofID: id), let raw = rawItem(containingRow: row) else { return nil }
        let rawMeta = levels[levels.count - 1].meta[raw]
        guard ItemMeta.tag(rawMeta) == ItemMeta.groupTag else { return .zoom(zoom) }
        // A same-coordinate group: its spread at this zoom, coming out of whatever holds it here.
        let li = levelIndex(zoom: zoom)
        let holder = ancestor(ofRaw: raw, level: li)
        var out: [Feature] = []
        var scratch = SpreadScratch()
        let spreadZoom = ClusterIndex.spreadZoom(zoom)
        let (holderID, holderIsGroup) = identity(level: li, item: holder)
        if holderIsGroup {
            withContext(level: li, spreadZoom: spreadZoom) { emit($0, item: holder, scratch: &scratch, into: &out) }
        } else {
            appendSpread(
                group: Int(ItemMeta.payload(rawMeta)), zoom: spreadZoom, parent: holderID, membersAreOwnParents: false,
                scratch: &scratch, into: &out)
        }
        return .spread(out)
    }

    public func aggregateValues(of feature: Feature) -> ArraySlice<Double> {
        let k = aggregates.count
        if feature.row >= 0 && Int(feature.row) < dataset.count {
            let row = Int(feature.row)
            return pointValues[row * k..<(row + 1) * k]
        }
        let li = Int(feature.slot) >> 26
        let item = Int(feature.slot) & ((1 << 26) - 1)
        guard feature.slot >= 0, li < levels.count, item < levels[li].count else { return [] }
        return levels[li].reduced[item * k..<(item + 1) * k]
    }

    /// A point as a leaf: its true position, no parent.
    func leaf(row: Int) -> Feature {
        Feature(
            id: FeatureID(dataset.ids[row]), lat: dataset.lat(row), lon: dataset.lon(row), count: 1, parent: nil,
            row: Int32(row))
    }

    /// The dataset row holding an id, nil when no row does.
    func row(ofID id: FeatureID) -> Int? {
        guard id <= UInt64(UInt32.max) else { return nil }
        if rowsByID.isEmpty {
            let ids = dataset.ids
            if id < UInt64(ids.count) && UInt64(ids[Int(id)]) == id { return Int(id) }
            var lo = 0
            var hi = ids.count
            while lo < hi {
                let mid = (lo + hi) >> 1
                if UInt64(ids[mid]) < id { lo = mid + 1 } else { hi = mid }
            }
            return lo < ids.count && UInt64(ids[lo]) == id ? lo : nil
        }
        var lo = 0
        var hi = rowsByID.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            if UInt64(dataset.ids[Int(rowsByID[mid])]) < id { lo = mid + 1 } else { hi = mid }
        }
        guard lo < rowsByID.count, UInt64(dataset.ids[Int(rowsByID[lo])]) == id else { return nil }
        return Int(rowsByID[lo])
    }

    /// The raw item of a row: its own, or its same-coordinate group's.
    func rawItem(containingRow row: Int) -> Int? {
        let raw = levels[levels.count - 1]
        let target = GridOrder.key(
            x: Mercator.x(lon: dataset.lon(row)), y: Mercator.y(lat: dataset.lat(row)), bits: raw.gridBits)
        func holds(_ r: Int) -> Bool {
            let meta = raw.meta[r]
            let payload = Int(ItemMeta.payload(meta))
            if ItemMeta.tag(meta) == 0 { return payload == row }
            let members = groups.rows(of: payload)
            return members.contains(Int32(row))
        }
        // The item sits at the row's own coordinate, so in its cell...
        var lo = 0
        var hi = raw.count
        while lo < hi {
            let mid = (lo + hi) >> 1
            if GridOrder.key(x: raw.xy[2 * mid], y: raw.xy[2 * mid + 1], bits: raw.gridBits) < target {
                lo = mid + 1
            } else {
                hi = mid
            }
        }
        var i = lo
        while i < raw.count && GridOrder.key(x: raw.xy[2 * i], y: raw.xy[2 * i + 1], bits: raw.gridBits) == target {
            if holds(i) { return i }
            i += 1
        }
        // ...unless a tolerance group centred elsewhere took it.
        return (0..<raw.count).first(where: holds)
    }

    /// The item at a level that holds raw item `raw` (following parents up from the raw level).
    func ancestor(ofRaw raw: Int, level li: Int) -> Int {
        var item = raw
        var l = levels.count - 1
        while l > li {
            item = Int(levels[l].parents[item])
            l -= 1
        }
        return item
    }

    /// A cluster id's item at the zoom that created it, nil when no cluster has this id.
    func clusterItem(_ id: FeatureID) -> (li: Int, item: Int)? {
        let tag = Int(id >> 32)
        let zoom = tag - 1
        guard zoom >= options.minZoom && zoom <= options.maxZoom else { return nil }
        guard let row = row(ofID: id & 0xFFFF_FFFF), let raw = rawItem(containingRow: row) else { return nil }
        let li = zoom - options.minZoom
        let item = ancestor(ofRaw: raw, level: li)
        // The seed's ancestor at that zoom is the cluster, if the id names one.
        guard identity(level: li, item: item).id == id, ItemMeta.tag(levels[li].meta[item]) == tag else {
            return nil
        }
        return (li, item)
    }
}

extension ClusterIndex {
    /// A cluster's counts: its run of the hierarchy order, tallied.
    public func addContents(of feature: Feature, to counts: inout [Int32]) {
        guard !feature.isPoint, feature.slot >= 0 else { return }
        addContents(level: Int(feature.slot) >> 26, item: Int(feature.slot) & ((1 << 26) - 1), to: &counts)
    }

    /// Item `item` of level li's counts, added to `counts`.
    func addContents(level li: Int, item: Int, to counts: inout [Int32]) {
        guard let tally, let order, li < levels.count, item < levels[li].count else { return }
        let count = Int(ItemMeta.count(levels[li].meta[item]))
        tally.add(run: order.run(level: li, item: item, count: count), to: &counts)
    }
}

extension ClusterIndex {
    /// A page read from the cluster's run of the hierarchy order, when the index keeps one (it does
    /// with contents): the run's ids alone are read, in order, and only the page's points are made.
    /// - Complexity: O(the cluster's points), about a nanosecond each, plus O(limit · log n).
    public func memberPage(of id: FeatureID, zoom: Double, after: UInt32?, limit: Int) -> MemberPage? {
        guard id >> 32 != 0, let order, let (li, item) = clusterItem(id) else {
            return members(of: id, zoom: zoom).map { MemberPage(members: $0, after: after, limit: limit) }
        }
        let count = Int(ItemMeta.count(levels[li].meta[item]))
        var selector = MemberPage.Selector(after: after, limit: limit)
        selector.offer(order.idAtPosition, run: order.run(level: li, item: item, count: count))
        return MemberPage(total: count, points: selector.page.map { leaf(ofID: $0.id) }, next: selector.next)
    }

    /// The point with dataset id `id`, which the index holds.
    func leaf(ofID id: UInt32) -> Feature {
        leaf(row: row(ofID: FeatureID(id))!)
    }
}
