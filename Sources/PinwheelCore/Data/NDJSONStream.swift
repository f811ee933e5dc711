/// Reads NDJSON (one GeoJSON Feature per line, see ``GeoJSONParser``) from pieces of any size, so a
/// file never has to be in memory whole: only its dataset and one piece are.
public struct NDJSONStream {
    private var collector: GeoJSONParser.Collector
    /// 1-based line of the next line to read.
    private var line = 1
    /// Features read so far (blank lines are not features), the next one's position id.
    private var index = 0
    /// The start of a line cut off by the end of the previous piece.
    private var carry: [UInt8] = []

    /// - Parameters:
    ///   - badRows: fail at the first bad line or skip bad lines with a count.
    ///   - expectedFeatures: a capacity hint; reserving more than is used costs address space, not memory.
    public init(badRows: BadRowPolicy = .fail, expectedFeatures: Int = 0) {
        collector = GeoJSONParser.Collector(badRows: badRows)
        collector.builder.ids.reserveCapacity(expectedFeatures)
        collector.builder.coordinates.reserveCapacity(expectedFeatures * 2)
    }

    /// Reads every line the piece completes; a last, unfinished line waits for the next piece.
    /// - Throws: ``DataError`` for the first bad line under ``BadRowPolicy/fail``.
    public mutating func feed(_ piece: UnsafeBufferPointer<UInt8>) throws(DataError) {
        var start = 0
        while start < piece.count {
            guard let newline = piece[start...].firstIndex(of: UInt8(ascii: "\n")) else {
                carry.append(contentsOf: piece[start...])
                return
            }
            if carry.isEmpty {
                try read(UnsafeBufferPointer(rebasing: piece[start..<newline]))
            } else {
                carry.append(contentsOf: piece[start..<newline])
                try readCarry()
            }
            start = newline + 1
        }
    }

    /// Reads a last line without a line feed and returns the dataset.
    public mutating func finish() throws(DataError) -> ParsedDataset {
        if !carry.isEmpty { try readCarry() }
        return collector.finish()
    }

    private mutating func readCarry() throws(DataError) {
        let line = carry
        carry.removeAll(keepingCapacity: true)
        let result: Result<Void, DataError> = line.withUnsafeBufferPointer { text in
            Result { () throws(DataError) in try read(text) }
        }
        try result.get()
    }

    /// Reads one line (without its line feed).
    private mutating func read(_ text: UnsafeBufferPointer<UInt8>) throws(DataError) {
        defer { line += 1 }
        guard text.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) else { return }
        defer { index += 1 }
        do {
            let value = try JSONReader.parse(text)
            try collector.add(value, index: index, line: line, path: "feature")
        } catch let failure as JSONReader.Failure {
            try collector.builder.reject(.invalidJSON(line: line, column: failure.column, reason: failure.reason))
        } catch let error as DataError {
            throw error
        } catch {
            preconditionFailure("only JSON and data errors are thrown here")
        }
    }
}
