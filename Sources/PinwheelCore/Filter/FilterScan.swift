/// Finds the rows of a property table a filter passes a column at a time: each comparison of a column
/// with a constant is one tight loop over that column's cells into a bit per row, and `all`, `any` and
/// `!` combine those bits 64 rows a word. Evaluating the expression tree row by row cost a slice, an
/// enum walk and a retained value per row; a never-seen filter over 1M points waits for this pass.
/// Parts of the rows run on the cores in parallel.
enum FilterScan {
    /// The rows of `table` (`count` rows) that pass `filter`, in order.
    /// - Complexity: O(rows × leaves of the filter), over the cores.
    static func rows(passing filter: BoundFilter, table: PropertyTable, count: Int) -> [Int] {
        let width = table.columns.count
        // Rows past the cells the table holds read no values, as a row with nil cells.
        let parts = max(1, min(8, count / Parallel.minimumItems))
        let step = (count + parts - 1) / max(1, parts)
        var found = [[Int]](repeating: [], count: parts)
        table.values.withUnsafeBufferPointer { cells in
            found.withUnsafeMutableBufferPointer { found in
                let out = UncheckedSendable(found)
                Parallel.run(parts) { part in
                    let lo = part * step
                    let hi = min(count, lo + step)
                    guard lo < hi else { return }
                    let scan = Part(cells: cells, width: width, lo: lo, hi: hi)
                    out.value[part] = scan.rows(scan.mask(filter.root))
                }
            }
        }
        return found.count == 1 ? found[0] : found.flatMap { $0 }
    }

    /// One range of rows: their cells, and masks of a bit per row (bit k of word w is row lo + 64w + k).
    struct Part {
        let cells: UnsafeBufferPointer<PropertyValue?>
        let width: Int
        let lo: Int
        let hi: Int

        var words: Int { (hi - lo + 63) / 64 }

        /// Row numbers of the set bits.
        func rows(_ mask: [UInt64]) -> [Int] {
            var out: [Int] = []
            out.reserveCapacity(mask.reduce(0) { $0 + $1.nonzeroBitCount })
            for (w, word) in mask.enumerated() {
                var bits = word
                while bits != 0 {
                    out.append(lo + w * 64 + bits.trailingZeroBitCount)
                    bits &= bits - 1
                }
            }
            return out
        }

        /// Every row set, or none.
        func constant(_ b: Bool) -> [UInt64] {
            guard b else { return [UInt64](repeating: 0, count: words) }
            var mask = [UInt64](repeating: ~0, count: words)
            clearTail(&mask)
            return mask
        }

        /// Clears the bits past the last row.
        func clearTail(_ mask: inout [UInt64]) {
            let used = (hi - lo) % 64
            if used != 0, !mask.isEmpty { mask[mask.count - 1] &= (1 << UInt64(used)) - 1 }
        }

        func mask(_ node: BoundFilter.Node) -> [UInt64] {
            switch node {
            case .constant(let b): return constant(b)
            case .has(let c): return column(c) { $0 != nil }
            case .isTrue(let c): return column(c) { $0 == .bool(true) }
            case .compare(let op, .column(let c), .literal(let v)): return compare(op, c, v)
            case .oneOf(.column(let c), let values): return oneOf(c, values)
            case .all(let parts):
                var mask = constant(true)
                for p in parts {
                    let m = self.mask(p)
                    var any: UInt64 = 0
                    for w in mask.indices {
                        mask[w] &= m[w]
                        any |= mask[w]
                    }
                    // No row left: the other parts cannot bring one back.
                    if any == 0 { break }
                }
                return mask
            case .any(let parts):
                var mask = constant(false)
                for p in parts {
                    let m = self.mask(p)
                    for w in mask.indices { mask[w] |= m[w] }
                }
                return mask
            case .not(let g):
                var mask = self.mask(g)
                for w in mask.indices { mask[w] = ~mask[w] }
                clearTail(&mask)
                return mask
            default:
                // Column against column, a constant left, `match`: row by row.
                return rows { BoundFilter.holds(node, $0) }
            }
        }

        /// A column against a constant, the shape nearly every filter is made of.
        private func compare(_ op: FilterComparison, _ c: Int, _ v: PropertyValue?) -> [UInt64] {
            switch (op, v) {
            case (.equal, nil): return column(c) { $0 == nil }
            case (.notEqual, nil): return column(c) { $0 != nil }
            case (_, nil): return constant(false)
            case (.equal, .number(let d)?), (.notEqual, .number(let d)?):
                let equal = op == .equal
                return column(c) { cell in
                    if case .number(let x)? = cell { return (x == d) == equal }
                    return !equal
                }
            case (.less, .number(let d)?):
                return column(c) { if case .number(let x)? = $0 { x < d } else { false } }
            case (.lessOrEqual, .number(let d)?):
                return column(c) { if case .number(let x)? = $0 { x <= d } else { false } }
            case (.greater, .number(let d)?):
                return column(c) { if case .number(let x)? = $0 { x > d } else { false } }
            case (.greaterOrEqual, .number(let d)?):
                return column(c) { if case .number(let x)? = $0 { x >= d } else { false } }
            case (.equal, .string(let s)?), (.notEqual, .string(let s)?):
                let equal = op == .equal
                let bytes = Array(s.utf8)
                return column(c) { cell in
                    if case .string(let x)? = cell { return Self.same(x, bytes) == equal }
                    return !equal
                }
            default:
                // Booleans, and strings by order: the general comparison.
                return rows { BoundFilter.holds(.compare(op, .column(c), .literal(v)), $0) }
            }
        }

        private func oneOf(_ c: Int, _ values: [PropertyValue]) -> [UInt64] {
            let numbers = values.compactMap { if case .number(let d) = $0 { d } else { nil } }
            let strings = values.compactMap { if case .string(let s) = $0 { Array(s.utf8) } else { nil } }
            let bools = values.compactMap { if case .bool(let b) = $0 { b } else { nil } }
            return column(c) { cell in
                switch cell {
                case .number(let x)?: numbers.contains(x)
                case .string(let x)?: strings.contains { Self.same(x, $0) }
                case .bool(let x)?: bools.contains(x)
                case nil: false
                }
            }
        }

        /// Whether a string's UTF-8 bytes are `bytes`, as ``PropertyValue/strictlyEquals(_:)`` compares.
        @inline(__always) static func same(_ s: String, _ bytes: [UInt8]) -> Bool {
            let utf8 = s.utf8
            guard utf8.count == bytes.count else { return false }
            return utf8.withContiguousStorageIfAvailable { $0.elementsEqual(bytes) } ?? utf8.elementsEqual(bytes)
        }

        /// A bit per row: `test` of the row's cell in column `c` (nil past the row's cells, or for -1).
        @inline(__always) private func column(_ c: Int, _ test: (PropertyValue?) -> Bool) -> [UInt64] {
            var mask = [UInt64](repeating: 0, count: words)
            let missing = test(nil)
            mask.withUnsafeMutableBufferPointer { mask in
                var row = lo
                var w = 0
                while row < hi {
                    let end = min(hi, row + 64)
                    var word: UInt64 = 0
                    var bit: UInt64 = 0
                    while row < end {
                        let i = row * width + c
                        let hit = c >= 0 && c < width && i < cells.count ? test(cells[i]) : missing
                        word |= (hit ? 1 : 0) << bit
                        bit += 1
                        row += 1
                    }
                    mask[w] = word
                    w += 1
                }
            }
            return mask
        }

        /// A bit per row: `test` of the whole row.
        private func rows(_ test: (BufferRow) -> Bool) -> [UInt64] {
            var mask = [UInt64](repeating: 0, count: words)
            for row in lo..<hi where test(BufferRow(cells: cells, base: row * width, width: width)) {
                mask[(row - lo) >> 6] |= 1 << UInt64((row - lo) & 63)
            }
            return mask
        }
    }

    /// One row's cells read straight from the table's storage.
    struct BufferRow: FilterRow {
        let cells: UnsafeBufferPointer<PropertyValue?>
        let base: Int
        let width: Int

        @inline(__always) func value(column: Int) -> PropertyValue? {
            column < width && base + column < cells.count ? cells[base + column] : nil
        }
    }
}
