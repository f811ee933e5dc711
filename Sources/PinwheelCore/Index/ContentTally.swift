/// Every point's ``ClusterContents/Code`` in an order where each cluster's points are one run of
/// positions (the hierarchy's order, or a tree's), with running totals every ``blockSize`` positions:
/// a cluster's counts are two totals' difference plus the codes between them and the run's ends.
/// About 2 bytes a point, and O(slots + blockSize) per cluster, where a per-cluster array of counts
/// would cost `slots` counts for every item of every zoom.
struct ContentTally: Sendable {
    /// Positions between two stored totals: a power of two.
    static let blockBits = 6
    static var blockSize: Int { 1 << blockBits }

    let contents: ClusterContents
    /// Each position's code.
    let codes: [ClusterContents.Code]
    /// For each block b, the counts over positions `0..<b × blockSize`, `slots` per block.
    let totals: [UInt32]

    /// - Parameter codes: the code of the point at each position.
    init(contents: ClusterContents, codes: [ClusterContents.Code]) {
        self.contents = contents
        self.codes = codes
        let slots = contents.slots
        let blocks = codes.count / Self.blockSize + 1
        var totals = [UInt32](repeating: 0, count: blocks * slots)
        var running = [UInt32](repeating: 0, count: slots)
        codes.withUnsafeBufferPointer { codes in
            for b in 0..<blocks {
                for s in 0..<slots { totals[b * slots + s] = running[s] }
                let end = min(codes.count, (b + 1) * Self.blockSize)
                guard b * Self.blockSize < end else { continue }
                for p in b * Self.blockSize..<end { Self.add(codes[p], by: 1, to: &running, contents: contents) }
            }
        }
        self.totals = totals
    }

    /// Adds (or takes away) one point of code `code` to `counts` (``ClusterContents/slots`` of them).
    @inline(__always)
    static func add<T: FixedWidthInteger>(
        _ code: ClusterContents.Code, by step: T, to counts: inout [T], contents: ClusterContents
    ) {
        let groups = contents.groupSlots
        if groups > 0 { counts[Int(code & 0xFF)] &+= step }
        var bits = code >> 8
        while bits != 0 {
            counts[groups + bits.trailingZeroBitCount] &+= step
            bits &= bits - 1
        }
    }

    /// Adds the counts of the positions in `run` to `counts`.
    /// - Complexity: O(slots + blockSize).
    func add(run: Range<Int>, to counts: inout [Int32]) {
        if run.count <= 2 * Self.blockSize {
            for p in run { Self.add(codes[p], by: 1, to: &counts, contents: contents) }
            return
        }
        let slots = contents.slots
        let (lo, hi) = (run.lowerBound >> Self.blockBits, run.upperBound >> Self.blockBits)
        for s in 0..<slots { counts[s] &+= Int32(bitPattern: totals[hi * slots + s] &- totals[lo * slots + s]) }
        // The totals count from the blocks' starts: less the head before the run, plus the tail after hi's.
        for p in lo << Self.blockBits..<run.lowerBound { Self.add(codes[p], by: -1, to: &counts, contents: contents) }
        for p in hi << Self.blockBits..<run.upperBound { Self.add(codes[p], by: 1, to: &counts, contents: contents) }
    }

    /// Bytes held.
    var storedBytes: Int { codes.count * 2 + totals.count * 4 }
}
