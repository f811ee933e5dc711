import Testing

@testable import PinwheelCore

@Suite("GeoJSON and NDJSON parser")
struct GeoJSONParserTests {
    func collection(_ features: String) -> [UInt8] {
        Array("{\"type\":\"FeatureCollection\",\"features\":[\n\(features)\n]}".utf8)
    }

    @Test("a FeatureCollection of points gives ids, coordinates and property columns")
    func featureCollection() throws {
        let bytes = collection(
            """
            {"type":"Feature","id":10,"geometry":{"type":"Point","coordinates":[2.35,48.85]},"properties":{"name":"Paris","pop":2140526}},
            {"type":"Feature","geometry":{"type":"Point","coordinates":[-0.12,51.5]},"properties":{"name":"London","capital":true,"tags":["a"]}},
            {"type":"Feature","geometry":{"type":"Point","coordinates":[13.4,52.5,34]},"properties":null}
            """)
        let d = try GeoJSONParser.parseFeatureCollection(bytes).dataset
        #expect(d.ids == [10, 1, 2])
        #expect(d.coordinates == [2.35, 48.85, -0.12, 51.5, 13.4, 52.5])
        #expect(d.properties.columns == ["name", "pop", "capital", "tags"])
        #expect(d.properties.value(row: 0, column: 1) == .number(2_140_526))
        #expect(d.properties.value(row: 1, column: 0) == "London")
        #expect(d.properties.value(row: 1, column: 2) == .bool(true))
        #expect(d.properties.value(row: 1, column: 3) == "[\"a\"]")
        #expect(d.properties.value(row: 0, column: 2) == nil)
        #expect(d.properties.value(row: 2, column: 0) == nil)
    }

    @Test("a bad latitude names the feature's line and its JSON path")
    func badLatitude() {
        let bytes = collection(
            """
            {"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]}},
            {"type":"Feature","geometry":{"type":"Point","coordinates":[1,95.5]}}
            """)
        #expect(
            throws: DataError.invalidLatitude(line: 3, column: "features[1].geometry.coordinates[1]", value: "95.5")
        ) {
            try GeoJSONParser.parseFeatureCollection(bytes)
        }
    }

    @Test("a non-point geometry is refused naming its type, a non-collection root is described")
    func structure() {
        let line = collection(
            """
            {"type":"Feature","geometry":{"type":"LineString","coordinates":[[1,2],[3,4]]}}
            """)
        let lineString = DataError.unsupportedGeometry(line: 2, column: "features[0].geometry.type", type: "LineString")
        #expect(throws: lineString) {
            try GeoJSONParser.parseFeatureCollection(line)
        }
        #expect(
            DataError.unsupportedGeometry(line: 2, column: "features[0].geometry.type", type: "MultiPoint").description
                == "line 2, features[0].geometry.type: a MultiPoint geometry is not a point; only Point features "
                + "(or \"geometry\": null, left out) can be served")
        let boolID = collection(
            """
            {"type":"Feature","id":true,"geometry":{"type":"Point","coordinates":[1,2]}}
            """)
        #expect(throws: DataError.invalidID(line: 2, column: "features[0].id", value: "true")) {
            try GeoJSONParser.parseFeatureCollection(boolID)
        }
        #expect(throws: DataError.invalidFeature(line: 1, column: "type", reason: "expected \"FeatureCollection\"")) {
            try GeoJSONParser.parseFeatureCollection(Array("{\"type\":\"Feature\"}".utf8))
        }
    }

    @Test("null geometries are counted apart under both policies; a Polygon is a bad row under skip")
    func unlocatedAndPolygon() throws {
        let bytes = collection(
            """
            {"type":"Feature","id":"a","geometry":null,"properties":{"n":"nowhere"}},
            {"type":"Feature","id":"b","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"n":"x"}},
            {"type":"Feature","id":"c","geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}},
            {"type":"Feature","id":"d","geometry":null},
            {"type":"Feature","id":"e","geometry":{"type":"Point","coordinates":[3,4]}}
            """)
        let parsed = try GeoJSONParser.parseFeatureCollection(bytes, badRows: .skip)
        #expect(parsed.dataset.ids == [1, 4])
        #expect(parsed.unlocated == 2)
        #expect(parsed.skipped == 1)
        #expect(parsed.errors == [.unsupportedGeometry(line: 4, column: "features[2].geometry.type", type: "Polygon")])
        #expect(throws: DataError.unsupportedGeometry(line: 4, column: "features[2].geometry.type", type: "Polygon")) {
            try GeoJSONParser.parseFeatureCollection(bytes, badRows: .fail)
        }
        let unlocatedOnly = collection(#"{"type":"Feature","geometry":null}"#)
        let none = try GeoJSONParser.parseFeatureCollection(unlocatedOnly, badRows: .fail)
        #expect(none.dataset.count == 0 && none.unlocated == 1 && none.skipped == 0)
    }

    @Test("string ids are kept as the property id, points numbered by position; a repeated one is a bad row")
    func stringIDs() throws {
        let text = """
            {"type":"Feature","id":"node/42","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"n":"a"}}
            {"type":"Feature","id":8589934592,"geometry":{"type":"Point","coordinates":[1,2]}}
            {"type":"Feature","id":"node/42","geometry":{"type":"Point","coordinates":[1,2]}}
            {"type":"Feature","id":7,"geometry":{"type":"Point","coordinates":[1,2]},"properties":{"id":"shadowed"}}
            """
        let parsed = try GeoJSONParser.parseNDJSON(Array(text.utf8), badRows: .skip)
        #expect(parsed.dataset.ids == [0, 1, 7])
        let table = parsed.dataset.properties
        #expect(table.columns == ["n", "id"])
        #expect((0..<3).map { table.value(row: $0, column: 1) } == ["node/42", "8589934592", "shadowed"])
        #expect(parsed.errors == [.duplicateID(line: 3, column: "feature.id", value: "\"node/42\"")])
    }

    @Test("bbox and foreign members are ignored and a third coordinate (altitude) is accepted")
    func asWritten() throws {
        let bytes = Array(
            """
            {"type":"FeatureCollection","bbox":[1,2,3,4],"name":"export","crs":{"type":"name"},"features":[
            {"type":"Feature","id":3,"bbox":[1,2,1,2],"title":"foreign","geometry":{"type":"Point","coordinates":[1,2,120.5],"bbox":[1,2,1,2]}}
            ]}
            """.utf8)
        let d = try GeoJSONParser.parseFeatureCollection(bytes).dataset
        #expect(d.ids == [3])
        #expect(d.coordinates == [1, 2])
        #expect(d.properties.columns.isEmpty)
        let line = #"{"type":"Feature","id":"x","bbox":[1,2,1,2],"geometry":{"type":"Point","coordinates":[1,2,3]}}"#
        let n = try GeoJSONParser.parseNDJSON(Array(line.utf8)).dataset
        #expect(n.ids == [0] && n.properties.columns == ["id"])
    }

    @Test("a property column first seen late is empty in the rows before it")
    func lateColumn() throws {
        let bytes = collection(
            """
            {"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"a":"1"}},
            {"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"a":"2"}},
            {"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"b":"3","a":"4"}}
            """)
        let table = try GeoJSONParser.parseFeatureCollection(bytes).dataset.properties
        #expect(table.columns == ["a", "b"])
        #expect(table.values == ["1", nil, "2", nil, "4", "3"])
    }

    @Test("text that is not JSON reports the line and column of the problem")
    func notJSON() {
        #expect(throws: DataError.invalidJSON(line: 2, column: 4, reason: "unexpected '}', expected a value")) {
            try GeoJSONParser.parseFeatureCollection(Array("{\"features\":\n[1,}".utf8))
        }
    }

    @Test("NDJSON reads one feature per line, skips blank lines and reports bad lines by number")
    func ndjson() throws {
        let text = """
            {"type":"Feature","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"n":"a"}}

            {"type":"Feature","geometry":{"type":"Point","coordinates":[3,4]},"properties":{"n":"b"}}
            {oops
            {"type":"Feature","geometry":{"type":"Point","coordinates":[500,4]}}
            """
        let parsed = try GeoJSONParser.parseNDJSON(Array(text.utf8), badRows: .skip)
        #expect(parsed.dataset.ids == [0, 1])
        #expect(parsed.dataset.properties.value(row: 1, column: 0) == "b")
        #expect(parsed.skipped == 2)
        #expect(
            parsed.errors == [
                .invalidJSON(line: 4, column: 2, reason: "unexpected 'o', expected a string key"),
                .invalidLongitude(line: 5, column: "feature.geometry.coordinates[0]", value: "500"),
            ])
        #expect(throws: DataError.invalidJSON(line: 4, column: 2, reason: "unexpected 'o', expected a string key")) {
            try GeoJSONParser.parseNDJSON(Array(text.utf8))
        }
    }

    @Test("NDJSON fed in pieces of any size reads as the whole, lines cut anywhere, no final line feed")
    func ndjsonPieces() throws {
        let text = Array(
            """
            {"type":"Feature","id":"é1","geometry":{"type":"Point","coordinates":[1,2]},"properties":{"n":"a"}}

            {"type":"Feature","geometry":null}
            {oops
            {"type":"Feature","geometry":{"type":"Point","coordinates":[3,4]},"properties":{"m":"b"}}
            """.utf8)
        let whole = try GeoJSONParser.parseNDJSON(text, badRows: .skip)
        #expect(whole.dataset.ids == [0, 3] && whole.unlocated == 1 && whole.skipped == 1)
        for size in [1, 2, 3, 7, 50, text.count] {
            var stream = NDJSONStream(badRows: .skip, expectedFeatures: 2)
            for start in stride(from: 0, to: text.count, by: size) {
                try text[start..<min(start + size, text.count)].withUnsafeBufferPointer { try stream.feed($0) }
            }
            let parsed = try stream.finish()
            #expect(parsed.dataset.ids == whole.dataset.ids && parsed.dataset.coordinates == whole.dataset.coordinates)
            #expect(parsed.dataset.properties.values == whole.dataset.properties.values)
            #expect(parsed.errors == whole.errors && parsed.unlocated == 1)
        }
    }

    @Test("duplicate ids are rejected naming the second line")
    func duplicateIDs() {
        let text = """
            {"type":"Feature","id":5,"geometry":{"type":"Point","coordinates":[1,2]}}
            {"type":"Feature","id":5,"geometry":{"type":"Point","coordinates":[1,2]}}
            """
        #expect(throws: DataError.duplicateID(line: 2, column: "feature.id", value: "5")) {
            try GeoJSONParser.parseNDJSON(Array(text.utf8))
        }
    }

    @Test("the format follows the file name")
    func formats() {
        #expect(DataFormat(fileName: "a.CSV") == .csv)
        #expect(DataFormat(fileName: "a.geojson") == .geojson)
        #expect(DataFormat(fileName: "a.ndjson") == .ndjson)
        #expect(DataFormat(fileName: "a.txt") == nil)
    }

    @Test("sparse property names stop at PropertyTable.maxColumns: later features bringing new ones are bad rows")
    func sparseNamesAreCapped() throws {
        let lines = (0..<300).map { k in
            "{\"type\":\"Feature\",\"geometry\":{\"type\":\"Point\",\"coordinates\":[1,2]},\"properties\":{\"p\(k)\":1}}"
        }
        let parsed = try GeoJSONParser.parseNDJSON(Array(lines.joined(separator: "\n").utf8), badRows: .skip)
        #expect(parsed.dataset.properties.columns.count == PropertyTable.maxColumns)
        #expect(parsed.skipped == 300 - PropertyTable.maxColumns)
        #expect(parsed.dataset.count == PropertyTable.maxColumns)
    }
}
