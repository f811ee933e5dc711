extension ClusterIndex.LevelView {
    /// One run of a grid row's cells, and the search for its first item: the run's first and last
    /// cell keys, the range still searched for the first item at or after `first`, and where the
    /// run's cell-directory groups end.
    struct RunSearch {
        let first: UInt64
        let last: UInt64
        var lo: Int
        var hi: Int
        let end: Int

        /// Takes one step of the binary search, with `key` giving an item's cell key; false once
        /// `lo` is the run's first item (or its end).
        @inline(__always) mutating func step(_ key: (Int) -> UInt64) -> Bool {
            guard lo < hi else { return false }
            let mid = (lo + hi) >> 1
            let below = key(mid) < first
            lo = below ? mid + 1 : lo
            hi = below ? hi : mid
            return true
        }
    }

    /// The grid cell key of item `i`.
    @inline(__always) func key(_ i: Int) -> UInt64 {
        GridOrder.key(x: xy[2 * i], y: xy[2 * i + 1], bits: gridBits)
    }

    /// The search for the items of a run of one grid row's cells, its directory entry read: the run's
    /// items come through the cell directory, its first cell found by binary search.
    @inline(__always) func search(row: Int, columns: ClosedRange<Int>) -> RunSearch {
        let first = UInt64(row) << UInt64(gridBits) | UInt64(columns.lowerBound)
        let last = UInt64(row) << UInt64(gridBits) | UInt64(columns.upperBound)
        let candidates = cells.items(from: first, through: last)
        return RunSearch(
            first: first, last: last, lo: candidates.lowerBound, hi: candidates.upperBound, end: candidates.upperBound)
    }

    /// Calls `body` with each item of a searched run, in cell-key order.
    @inline(__always) func forEachItem(of run: RunSearch, _ body: (Int) -> Void) {
        var i = run.lo
        while i < run.end && key(i) <= run.last {
            body(i)
            i += 1
        }
    }

    /// Calls `body` with each item in a run of one grid row's cells, in cell-key order.
    @inline(__always) func forEachItem(row: Int, columns: ClosedRange<Int>, _ body: (Int) -> Void) {
        var run = search(row: row, columns: columns)
        while run.step(key) {}
        forEachItem(of: run, body)
    }

    /// Calls `body` with each item of several runs, run after run in cell-key order, as
    /// ``forEachItem(row:columns:_:)`` would one run at a time.
    ///
    /// A run's search for its first item reads a few items, each a likely cache miss on a large
    /// index, and each read depends on the one before. Here the runs' searches go a step at a time
    /// together, so the misses of different runs overlap: a pan reads two short runs in each of its
    /// rows, and their searches were most of its time.
    @inline(__always) func forEachItem(in runs: UnsafeMutableBufferPointer<RunSearch>, _ body: (Int) -> Void) {
        var searching = true
        while searching {
            searching = false
            for k in runs.indices where runs[k].step(key) {
                searching = true
            }
        }
        for run in runs {
            forEachItem(of: run, body)
        }
    }

    /// Runs searched together: enough for the rows of a pan across a 1280×800 view, whose cells are
    /// at least a cluster radius wide.
    static let runsSearchedTogether = 64
}
