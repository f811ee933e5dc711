/// What every cluster counts besides its points: how many of them have each value of one column
/// (`serve --group-by`), and how many each ``FlagRule`` matches (`serve --flag`).
///
/// The values are fixed when the data is loaded (``choosing(groupBy:flags:from:)``): the most common,
/// at most ``maxValues``, then one "other" bucket for the rest, for blank cells and for values that
/// appear only later, so a cluster's breakdown has the same meaning for the server's whole life and a
/// rebuild gives every cluster the same slots. One column, because each point carries one category
/// code and each cluster one count per value: a second column would multiply the slots (or the wire
/// bytes of every cluster) for a breakdown no donut draws; yes/no questions about other columns are
/// what flags are for.
///
/// Each point reduces to a ``Code``: its value's index in the low byte, one bit per flag above.
public struct ClusterContents: Equatable, Sendable {
    /// Most values a breakdown lists before "other": what a donut or legend still tells apart.
    public static let maxValues = 12
    /// Most flags: one bit each in a point's code.
    public static let maxFlags = 8

    /// A point's value index (low 8 bits) and flag bits (bit 8 + k for flag k).
    public typealias Code = UInt16

    /// The column broken down; nil without `--group-by`.
    public var column: String?
    /// Its values counted apart, most common first; index `values.count` is "other".
    public var values: [String]
    public var flags: [FlagRule]

    /// Nothing counted.
    public static let none = ClusterContents(column: nil, values: [], flags: [])

    public init(column: String?, values: [String], flags: [FlagRule]) {
        self.column = column
        self.values = values
        self.flags = flags
    }

    /// True when clusters carry nothing beyond their count.
    public var isEmpty: Bool { column == nil && flags.isEmpty }

    /// Slots of a breakdown: the values and "other", or none without a column.
    public var groupSlots: Int { column == nil ? 0 : values.count + 1 }

    /// Counts a cluster carries: its breakdown's slots, then one per flag.
    public var slots: Int { groupSlots + flags.count }

    /// Chooses the values of `column` that breakdowns list: the most common in `dataset` (blank
    /// cells are no value), ties by text.
    /// - Throws: ``IndexError/invalidContents(reason:)`` for a column the dataset lacks or too many flags.
    public static func choosing(groupBy column: String?, flags: [FlagRule], from dataset: Dataset) throws(IndexError)
        -> ClusterContents
    {
        let columns = dataset.properties.columns
        guard flags.count <= maxFlags else {
            throw .invalidContents(reason: "at most \(maxFlags) flags, got \(flags.count)")
        }
        var seen = Set<String>()
        for flag in flags {
            guard seen.insert(flag.name).inserted else {
                throw .invalidContents(reason: "two flags are named \"\(flag.name)\"")
            }
            for c in flag.columns where !columns.contains(c) {
                throw .invalidContents(
                    reason: "flag \(flag.name) reads column \"\(c)\"; the dataset has columns \(columns)")
            }
        }
        guard let column else { return ClusterContents(column: nil, values: [], flags: flags) }
        guard let c = columns.firstIndex(of: column) else {
            throw .invalidContents(reason: "cannot group by column \"\(column)\": the dataset has columns \(columns)")
        }
        var counts: [String: Int] = [:]
        // The first few texts met are counted in a short list compared as text, which a category
        // column's every row then finds in a few comparisons; other values are hashed.
        var few: [(label: String, count: Int)] = []
        let width = columns.count
        dataset.properties.values.withUnsafeBufferPointer { cells in
            rows: for row in 0..<dataset.count {
                guard let value = cells[row * width + c] else { continue }
                if case .string(let text) = value {
                    for k in few.indices where few[k].label == text {
                        few[k].count += 1
                        continue rows
                    }
                    if few.count < Self.fewValues {
                        few.append((text, 1))
                        continue
                    }
                }
                counts[Self.label(value), default: 0] += 1
            }
        }
        for (label, count) in few { counts[label, default: 0] += count }
        let top = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.prefix(maxValues)
        return ClusterContents(column: column, values: top.map(\.key), flags: flags)
    }

    /// Texts counted apart from the hashed rest while choosing values.
    static let fewValues = 16

    /// How a value is listed in a breakdown: a string as it is, a number or a boolean as JSON writes it.
    public static func label(_ value: PropertyValue) -> String {
        if case .string(let s) = value { return s }
        return value.description
    }

    /// Codes points by their property cells in a table of `columns`, resolved once.
    public func coder(columns: [String]) -> Coder {
        Coder(contents: self, columns: columns)
    }

    /// Turns a point's cells into its ``Code``.
    public struct Coder: Sendable {
        let column: Int?
        /// The values listed, most common first: a text cell is compared with them in turn, which
        /// finds most rows' value in a few comparisons, cheaper than hashing it.
        let labels: [String]
        let valueIndex: [String: UInt16]
        let other: UInt16
        let flags: [BoundFilter]

        init(contents: ClusterContents, columns: [String]) {
            column = contents.column.flatMap { columns.firstIndex(of: $0) }
            labels = contents.values
            valueIndex = Dictionary(
                contents.values.enumerated().map { ($1, UInt16($0)) }, uniquingKeysWith: { first, _ in first })
            other = UInt16(contents.values.count)
            flags = contents.flags.map { BoundFilter($0.expression, columns: columns) }
        }

        /// The code of a point whose cells are `cells` (in the columns' order; missing cells are no value).
        public func code(_ cells: ArraySlice<PropertyValue?>) -> Code {
            let row = PropertyCells(cells)
            var code: Code = 0
            if let column { code = valueCode(row.value(column: column)) }
            for (k, flag) in flags.enumerated() where flag.matches(row) {
                code |= 1 << (8 + k)
            }
            return code
        }

        /// The value index of one cell of the grouped column.
        @inline(__always)
        func valueCode(_ value: PropertyValue?) -> Code {
            guard let value else { return other }
            if case .string(let text) = value {
                // The first listed label equal to the text, as the dictionary (which keeps the first) has it.
                for k in labels.indices where labels[k] == text { return Code(k) }
                return other
            }
            return valueIndex[ClusterContents.label(value)] ?? other
        }

        /// Every row's code, in row order, for a table of `rows` rows in the columns the coder was made
        /// for; in two parts on two threads when `concurrently` and the table is large.
        func codes(of properties: PropertyTable, rows: Int, concurrently: Bool) -> [Code] {
            var codes = [Code](repeating: 0, count: rows)
            let width = properties.columns.count
            let parts = rows >= Parallel.minimumItems ? 2 : 1
            codes.withUnsafeMutableBufferPointer { out in
                properties.values.withUnsafeBufferPointer { cells in
                    let shared = UncheckedSendable((out: out, cells: cells))
                    Parallel.run(parts, concurrently: concurrently) { part in
                        let (out, cells) = shared.value
                        for row in (part * rows / parts)..<((part + 1) * rows / parts) {
                            var code: Code = 0
                            if let column { code = valueCode(cells[row * width + column]) }
                            if !flags.isEmpty {
                                let row = PropertyCells(properties.values[row * width..<(row + 1) * width])
                                for (k, flag) in flags.enumerated() where flag.matches(row) { code |= 1 << (8 + k) }
                            }
                            out[row] = code
                        }
                    }
                }
            }
            return codes
        }
    }
}
