/// Reads CSV (RFC 4180: comma-separated, `"` quotes fields that hold commas, quotes or line breaks,
/// `""` is a quote inside them; LF or CRLF line ends; an optional UTF-8 byte-order mark).
///
/// The header names the columns. Latitude is `lat` or `latitude`, longitude `lon`, `lng` or
/// `longitude`, the optional id `id` (names compared case-insensitively, spaces trimmed); every
/// other column becomes a property, in header order. Blank lines are ignored.
///
/// Ids: when the first row's id is a whole number in 0..<2^32 every id must be one, and is the
/// point's feature id; otherwise every id is a name (1 to ``PointKey/maxNameBytes`` bytes, such as
/// `veh-1`), the point is a named point as a producer's string key makes one (its feature id from
/// ``PointKey/firstNamedID`` up, in row order), and a producer's change with that name reaches it.
///
/// Types, inferred per column: a column whose every non-empty cell is a JSON number (`12`, `-0.5`,
/// `1e3`; not `012`, `+1` or `.5`, so codes with leading zeros stay text) holds numbers; one whose every
/// non-empty cell is `true` or `false` holds booleans; any other column holds strings as written. An
/// empty cell is no value.
public enum CSVParser {
    static let latitudeNames = ["lat", "latitude"]
    static let longitudeNames = ["lon", "lng", "longitude"]
    static let idNames = ["id"]

    /// Parses a CSV dataset; see ``DatasetParser/parse(_:format:badRows:)``.
    public static func parse(_ bytes: [UInt8], badRows: BadRowPolicy = .fail) throws(DataError) -> ParsedDataset {
        let result: Result<ParsedDataset, DataError> = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(DataError) in
                var reader = Reader(bytes: buffer)
                return try reader.read(badRows: badRows)
            }
        }
        return try result.get()
    }

    /// One field of the current record: a byte range, and whether it holds doubled quotes to undo.
    struct Field {
        var start: Int
        var end: Int
        var escapedQuotes: Bool
    }

    /// Why a record could not be split into fields.
    enum SplitProblem {
        case unterminatedQuote(field: Int)
        case strayQuote(field: Int)
    }

    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var i = 0
        /// 1-based line of the next byte.
        var line = 1
        var fields: [Field] = []
        var scratch: [UInt8] = []

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
            // A UTF-8 byte-order mark is not part of the first column's name.
            if bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF { i = 3 }
        }

        mutating func read(badRows: BadRowPolicy) throws(DataError) -> ParsedDataset {
            // Header.
            var headerLine = line
            var header: [String] = []
            while i < bytes.count {
                headerLine = line
                let problem = nextRecord()
                if isBlankRecord { continue }
                if let problem {
                    switch problem {
                    case .unterminatedQuote: throw .unterminatedQuote(line: headerLine, column: "header")
                    case .strayQuote: throw .strayQuote(line: headerLine, column: "header")
                    }
                }
                for (k, f) in fields.enumerated() {
                    guard let name = text(f) else {
                        throw .invalidUTF8(line: headerLine, column: "header field \(k + 1)")
                    }
                    header.append(name.trimmingSpaces())
                }
                break
            }
            guard !header.isEmpty else { throw .empty }
            let lowered = header.map { $0.lowercased() }
            // A set, not a scan of the names before each one: a wide header must not cost its square.
            var seen = Set<String>(minimumCapacity: lowered.count)
            for (k, name) in lowered.enumerated() where !seen.insert(name).inserted {
                throw .duplicateColumn(line: headerLine, column: header[k])
            }
            guard let latIndex = lowered.firstIndex(where: { CSVParser.latitudeNames.contains($0) }) else {
                throw .missingColumn(line: headerLine, accepted: CSVParser.latitudeNames, header: header)
            }
            guard let lonIndex = lowered.firstIndex(where: { CSVParser.longitudeNames.contains($0) }) else {
                throw .missingColumn(line: headerLine, accepted: CSVParser.longitudeNames, header: header)
            }
            let idIndex = lowered.firstIndex(where: { CSVParser.idNames.contains($0) })
            let propertyIndices = header.indices.filter { $0 != latIndex && $0 != lonIndex && $0 != idIndex }

            var builder = DatasetBuilder(badRows: badRows)
            // Roughly one row per 30 bytes for typical place files; a hint, not a limit.
            let estimate = bytes.count / 30
            builder.ids.reserveCapacity(estimate)
            builder.coordinates.reserveCapacity(estimate * 2)
            builder.values.reserveCapacity(estimate * propertyIndices.count)
            var rowValues: [String] = []
            rowValues.reserveCapacity(propertyIndices.count)
            // The cells as text, typed once every row is read.
            var texts: [String] = []
            texts.reserveCapacity(estimate * propertyIndices.count)
            // Whether ids are numbers, decided by the first row's; then the names given so far.
            var numericIDs: Bool?
            var names: [UInt32: String] = [:]
            var idByName: [String: UInt32] = [:]
            var rowIndex = 0
            while i < bytes.count {
                let rowLine = line
                let problem = nextRecord()
                if isBlankRecord { continue }
                defer { rowIndex += 1 }
                if let problem {
                    switch problem {
                    case .unterminatedQuote(let k):
                        try builder.reject(.unterminatedQuote(line: rowLine, column: columnName(header, k)))
                    case .strayQuote(let k):
                        try builder.reject(.strayQuote(line: rowLine, column: columnName(header, k)))
                    }
                    continue
                }
                do throws(DataError) {
                    guard fields.count == header.count else {
                        throw .wrongFieldCount(line: rowLine, expected: header.count, found: fields.count)
                    }
                    let (lat, lon) = try DatasetBuilder.check(
                        lat: number(fields[latIndex]), latText: rawText(fields[latIndex]),
                        lon: number(fields[lonIndex]), lonText: rawText(fields[lonIndex]),
                        line: rowLine, latColumn: header[latIndex], lonColumn: header[lonIndex])
                    var id = UInt32(truncatingIfNeeded: rowIndex)
                    var name: String?
                    if let idIndex {
                        let parsed = wholeNumber(fields[idIndex])
                        if numericIDs == nil { numericIDs = parsed != nil }
                        if numericIDs == true {
                            guard let parsed else {
                                throw .invalidID(
                                    line: rowLine, column: header[idIndex], value: rawText(fields[idIndex]))
                            }
                            id = parsed
                        } else {
                            guard let text = text(fields[idIndex]) else {
                                throw .invalidUTF8(line: rowLine, column: header[idIndex])
                            }
                            guard !text.isEmpty, text.utf8.count <= PointKey.maxNameBytes else {
                                throw .invalidName(line: rowLine, column: header[idIndex], value: text)
                            }
                            guard idByName[text] == nil else {
                                throw .duplicateID(line: rowLine, column: header[idIndex], value: "\"\(text)\"")
                            }
                            name = text
                            id = PointKey.firstNamedID &+ UInt32(truncatingIfNeeded: idByName.count)
                        }
                    }
                    rowValues.removeAll(keepingCapacity: true)
                    for c in propertyIndices {
                        guard let value = text(fields[c]) else {
                            throw .invalidUTF8(line: rowLine, column: header[c])
                        }
                        rowValues.append(value)
                    }
                    // Row positions are unique by construction; only an id column needs checking.
                    if let idIndex, name == nil { try builder.claim(id: id, line: rowLine, column: header[idIndex]) }
                    if let name {
                        idByName[name] = id
                        names[id] = name
                    }
                    builder.append(id: id, lat: lat, lon: lon)
                    texts.append(contentsOf: rowValues)
                } catch {
                    try builder.reject(error)
                }
            }
            builder.values = CSVParser.typed(texts, width: propertyIndices.count)
            return builder.finish(columns: propertyIndices.map { header[$0] }, names: names)
        }

        /// True when the record just read is an empty line.
        var isBlankRecord: Bool {
            fields.count == 1 && fields[0].start == fields[0].end && !fields[0].escapedQuotes
                && (fields[0].start == 0 || bytes[fields[0].start - 1] != UInt8(ascii: "\""))
        }

        func columnName(_ header: [String], _ k: Int) -> String {
            k < header.count ? header[k] : "field \(k + 1)"
        }

        /// Splits the next record into `fields`, leaving the cursor after its line end. A problem
        /// still consumes the rest of the line (or, for an open quote, the rest of the input).
        mutating func nextRecord() -> SplitProblem? {
            fields.removeAll(keepingCapacity: true)
            let n = bytes.count
            while true {
                if i < n && bytes[i] == UInt8(ascii: "\"") {
                    let start = i + 1
                    var j = start
                    var escaped = false
                    var closed = false
                    while j < n {
                        let c = bytes[j]
                        if c == UInt8(ascii: "\"") {
                            if j + 1 < n && bytes[j + 1] == UInt8(ascii: "\"") {
                                escaped = true
                                j += 2
                                continue
                            }
                            closed = true
                            break
                        }
                        if c == UInt8(ascii: "\n") { line += 1 }
                        j += 1
                    }
                    fields.append(Field(start: start, end: j, escapedQuotes: escaped))
                    guard closed else {
                        i = n
                        return .unterminatedQuote(field: fields.count - 1)
                    }
                    i = j + 1
                    if i >= n { return nil }
                    switch bytes[i] {
                    case UInt8(ascii: ","): i += 1
                    case UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                        endLine()
                        return nil
                    default:
                        let k = fields.count - 1
                        skipLine()
                        return .strayQuote(field: k)
                    }
                } else {
                    let start = i
                    while i < n {
                        let c = bytes[i]
                        if c == UInt8(ascii: ",") || c == UInt8(ascii: "\n") || c == UInt8(ascii: "\r") { break }
                        i += 1
                    }
                    fields.append(Field(start: start, end: i, escapedQuotes: false))
                    if i >= n { return nil }
                    if bytes[i] == UInt8(ascii: ",") {
                        i += 1
                        // A comma at the very end of the input still opens a last, empty field.
                        if i >= n { fields.append(Field(start: i, end: i, escapedQuotes: false)) }
                    } else {
                        endLine()
                        return nil
                    }
                }
                if i >= n { return nil }
            }
        }

        /// Consumes one line end: LF, CRLF or a lone CR.
        mutating func endLine() {
            if bytes[i] == UInt8(ascii: "\r") {
                i += 1
                if i < bytes.count && bytes[i] == UInt8(ascii: "\n") { i += 1 }
            } else {
                i += 1
            }
            line += 1
        }

        mutating func skipLine() {
            while i < bytes.count && bytes[i] != UInt8(ascii: "\n") && bytes[i] != UInt8(ascii: "\r") { i += 1 }
            if i < bytes.count { endLine() }
        }

        /// The field's bytes with spaces and tabs trimmed, for numbers and ids.
        func trimmed(_ f: Field) -> UnsafeBufferPointer<UInt8> {
            var s = f.start
            var e = f.end
            while s < e && (bytes[s] == 0x20 || bytes[s] == 0x09) { s += 1 }
            while e > s && (bytes[e - 1] == 0x20 || bytes[e - 1] == 0x09) { e -= 1 }
            return UnsafeBufferPointer(rebasing: bytes[s..<e])
        }

        func number(_ f: Field) -> Double? {
            f.escapedQuotes ? nil : DoubleParser.parse(trimmed(f))
        }

        func wholeNumber(_ f: Field) -> UInt32? {
            let t = trimmed(f)
            guard !t.isEmpty, t.count <= 10 else { return nil }
            var v: UInt64 = 0
            for c in t {
                guard let d = DoubleParser.digit(c) else { return nil }
                v = v * 10 + UInt64(d)
            }
            return v <= UInt64(UInt32.max) ? UInt32(v) : nil
        }

        /// The field as text, doubled quotes undone; nil when it is not UTF-8.
        mutating func text(_ f: Field) -> String? {
            let span = UnsafeBufferPointer(rebasing: bytes[f.start..<f.end])
            guard f.escapedQuotes else { return UTF8Text.string(span) }
            scratch.removeAll(keepingCapacity: true)
            var k = 0
            while k < span.count {
                scratch.append(span[k])
                // Doubled quotes were checked while splitting; keep one of each pair.
                k += span[k] == UInt8(ascii: "\"") ? 2 : 1
            }
            return UTF8Text.string(scratch)
        }

        /// The field for an error message, with anything not UTF-8 replaced.
        func rawText(_ f: Field) -> String {
            String(decoding: UnsafeBufferPointer(rebasing: bytes[f.start..<f.end]), as: UTF8.self)
        }
    }
}

extension CSVParser {
    /// The cells of a row-major table of `width` columns, each column typed as the parser's documentation
    /// says: numbers, booleans, or strings; empty cells are no value.
    static func typed(_ texts: [String], width: Int) -> [PropertyValue?] {
        var values = [PropertyValue?](repeating: nil, count: texts.count)
        guard width > 0 else { return values }
        let rows = texts.count / width
        for c in 0..<width {
            var numbers = true
            var booleans = true
            for r in 0..<rows {
                let t = texts[r * width + c]
                if t.isEmpty { continue }
                if numbers && !isJSONNumber(t.trimmingSpaces()) { numbers = false }
                if booleans && t != "true" && t != "false" { booleans = false }
                if !numbers && !booleans { break }
            }
            for r in 0..<rows {
                let t = texts[r * width + c]
                if t.isEmpty { continue }
                if numbers, let d = Double(t.trimmingSpaces()), d.isFinite {
                    values[r * width + c] = .number(d == 0 ? 0 : d)
                } else if booleans && !numbers {
                    values[r * width + c] = .bool(t == "true")
                } else {
                    values[r * width + c] = .string(t)
                }
            }
        }
        return values
    }

    /// Whether the text is a number as JSON writes one: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    static func isJSONNumber(_ text: String) -> Bool {
        let b = Array(text.utf8)
        var i = 0
        func digits() -> Int {
            let start = i
            while i < b.count && b[i] >= UInt8(ascii: "0") && b[i] <= UInt8(ascii: "9") { i += 1 }
            return i - start
        }
        if i < b.count && b[i] == UInt8(ascii: "-") { i += 1 }
        guard i < b.count else { return false }
        if b[i] == UInt8(ascii: "0") {
            i += 1
        } else {
            guard digits() > 0 else { return false }
        }
        if i < b.count && b[i] == UInt8(ascii: ".") {
            i += 1
            guard digits() > 0 else { return false }
        }
        if i < b.count && (b[i] == UInt8(ascii: "e") || b[i] == UInt8(ascii: "E")) {
            i += 1
            if i < b.count && (b[i] == UInt8(ascii: "+") || b[i] == UInt8(ascii: "-")) { i += 1 }
            guard digits() > 0 else { return false }
        }
        return i == b.count
    }
}

extension String {
    /// The string without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return String(s)
    }
}
