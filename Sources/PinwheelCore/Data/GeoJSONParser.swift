/// Reads GeoJSON Points: a FeatureCollection, or NDJSON with one Feature per line.
///
/// Each feature needs `"geometry":{"type":"Point","coordinates":[lon,lat]}`. A numeric `id` is the
/// dataset id; a missing or string id means the feature's position (0-based). `properties` become
/// columns in first-seen order: strings as they are, numbers in shortest form, booleans as
/// `true`/`false`, nested values as JSON text, and a missing or null value as the empty string.
public enum GeoJSONParser {
    /// Parses a FeatureCollection; see ``DatasetParser/parse(_:format:badRows:)``.
    public static func parseFeatureCollection(_ bytes: [UInt8], badRows: BadRowPolicy = .fail)
        throws(DataError) -> ParsedDataset
    {
        let lines = LineIndex(bytes)
        let root: JSONValue
        do {
            root = try JSONReader.parse(bytes)
        } catch {
            throw .invalidJSON(line: error.line, column: error.column, reason: error.reason)
        }
        guard case .object(let collection) = root else {
            throw .invalidFeature(
                line: 1, column: "root", reason: "expected a FeatureCollection object, got \(root.kindName)")
        }
        guard case .string("FeatureCollection") = collection["type"] else {
            throw .invalidFeature(
                line: lines.line(of: collection.offset), column: "type",
                reason: "expected \"FeatureCollection\"")
        }
        guard case .array(let features) = collection["features"] else {
            throw .invalidFeature(
                line: lines.line(of: collection.offset), column: "features",
                reason: "expected an array of features")
        }
        var collector = Collector(badRows: badRows)
        for (index, value) in features.enumerated() {
            let line: Int
            if case .object(let o) = value {
                line = lines.line(of: o.offset)
            } else {
                line = lines.line(of: collection.offset)
            }
            try collector.add(value, index: index, line: line, path: "features[\(index)]")
        }
        return collector.finish()
    }

    /// Parses NDJSON: one Feature per non-blank line; a line that is not JSON is a bad row.
    public static func parseNDJSON(_ bytes: [UInt8], badRows: BadRowPolicy = .fail) throws(DataError) -> ParsedDataset {
        var collector = Collector(badRows: badRows)
        let result: Result<Void, DataError> = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(DataError) in
                var start = 0
                var line = 1
                var index = 0
                while start < buffer.count {
                    var end = start
                    while end < buffer.count && buffer[end] != UInt8(ascii: "\n") { end += 1 }
                    let text = UnsafeBufferPointer(rebasing: buffer[start..<end])
                    if text.contains(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0D }) {
                        do {
                            let value = try JSONReader.parse(text)
                            try collector.add(value, index: index, line: line, path: "feature")
                        } catch let failure as JSONReader.Failure {
                            try collector.builder.reject(
                                .invalidJSON(line: line, column: failure.column, reason: failure.reason))
                        } catch let error as DataError {
                            throw error
                        } catch {
                            preconditionFailure("only JSON and data errors are thrown here")
                        }
                        index += 1
                    }
                    start = end + 1
                    line += 1
                }
            }
        }
        try result.get()
        return collector.finish()
    }

    /// Gathers features, then lays their properties out as columns.
    struct Collector {
        var builder: DatasetBuilder
        var columns: [String] = []
        var columnIndex: [String: Int] = [:]
        /// Per accepted feature, its properties as (column, value) pairs.
        var rows: [[(Int, String)]] = []

        init(badRows: BadRowPolicy) { builder = DatasetBuilder(badRows: badRows) }

        mutating func add(_ value: JSONValue, index: Int, line: Int, path: String) throws(DataError) {
            do throws(DataError) {
                let (id, lat, lon, properties) = try GeoJSONParser.point(
                    from: value, index: index, line: line, path: path)
                try builder.claim(id: id, line: line, column: "\(path).id")
                builder.append(id: id, lat: lat, lon: lon)
                var row: [(Int, String)] = []
                if let properties {
                    for key in properties.members.keys.sorted() {
                        let column: Int
                        if let c = columnIndex[key] {
                            column = c
                        } else {
                            column = columns.count
                            columns.append(key)
                            columnIndex[key] = column
                        }
                        row.append((column, GeoJSONParser.propertyText(properties.members[key]!)))
                    }
                }
                rows.append(row)
            } catch {
                try builder.reject(error)
            }
        }

        mutating func finish() -> ParsedDataset {
            builder.values = Array(repeating: "", count: rows.count * columns.count)
            for (r, row) in rows.enumerated() {
                for (c, text) in row { builder.values[r * columns.count + c] = text }
            }
            return builder.finish(columns: columns)
        }
    }

    /// Validates one Feature and pulls out what a dataset row needs.
    static func point(from value: JSONValue, index: Int, line: Int, path: String)
        throws(DataError) -> (UInt32, Double, Double, JSONObject?)
    {
        guard case .object(let feature) = value else {
            throw .invalidFeature(line: line, column: path, reason: "expected a Feature object, got \(value.kindName)")
        }
        guard case .string("Feature") = feature["type"] else {
            throw .invalidFeature(line: line, column: "\(path).type", reason: "expected \"Feature\"")
        }
        guard case .object(let geometry) = feature["geometry"] else {
            throw .invalidFeature(line: line, column: "\(path).geometry", reason: "expected a Point geometry object")
        }
        guard case .string(let type) = geometry["type"], type == "Point" else {
            let got = if case .string(let t) = geometry["type"] { t } else { "no type" }
            throw .invalidFeature(line: line, column: "\(path).geometry.type", reason: "expected \"Point\", got \(got)")
        }
        guard case .array(let coordinates) = geometry["coordinates"], coordinates.count >= 2 else {
            throw .invalidFeature(
                line: line, column: "\(path).geometry.coordinates",
                reason: "expected [longitude, latitude]")
        }
        func number(_ v: JSONValue) -> Double? { if case .number(let d) = v { d } else { nil } }
        let (lat, lon) = try DatasetBuilder.check(
            lat: number(coordinates[1]), latText: text(coordinates[1]),
            lon: number(coordinates[0]), lonText: text(coordinates[0]),
            line: line, latColumn: "\(path).geometry.coordinates[1]", lonColumn: "\(path).geometry.coordinates[0]")
        var id = UInt32(truncatingIfNeeded: index)
        if case .number(let d) = feature["id"] {
            guard d >= 0, d <= Double(UInt32.max), d == d.rounded(.towardZero) else {
                throw .invalidID(line: line, column: "\(path).id", value: text(.number(d)))
            }
            id = UInt32(d)
        }
        var properties: JSONObject?
        switch feature["properties"] {
        case .object(let o): properties = o
        case nil, .null: properties = nil
        case let other?:
            throw .invalidFeature(
                line: line, column: "\(path).properties", reason: "expected an object, got \(other.kindName)")
        }
        return (id, lat, lon, properties)
    }

    /// A property value as table text.
    static func propertyText(_ v: JSONValue) -> String {
        switch v {
        case .null: ""
        case .string(let s): s
        default: text(v)
        }
    }

    /// A JSON value written compactly.
    static func text(_ v: JSONValue) -> String {
        var writer = JSONWriter(capacity: 32)
        writer.value(v)
        return writer.text
    }
}

/// Turns byte offsets into 1-based line numbers.
struct LineIndex {
    /// Offsets just after each line feed.
    var lineStarts: [Int] = [0]

    init(_ bytes: [UInt8]) {
        for (k, c) in bytes.enumerated() where c == UInt8(ascii: "\n") { lineStarts.append(k + 1) }
    }

    func line(of offset: Int) -> Int {
        var lo = 0
        var hi = lineStarts.count
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if lineStarts[mid] <= offset { lo = mid } else { hi = mid }
        }
        return lo + 1
    }
}
