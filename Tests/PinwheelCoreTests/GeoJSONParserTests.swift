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
        #expect(d.properties.value(row: 0, column: 1) == "2140526")
        #expect(d.properties.value(row: 1, column: 0) == "London")
        #expect(d.properties.value(row: 1, column: 2) == "true")
        #expect(d.properties.value(row: 1, column: 3) == "[\"a\"]")
        #expect(d.properties.value(row: 0, column: 2) == "")
        #expect(d.properties.value(row: 2, column: 0) == "")
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

    @Test("non-point geometry, a bad id and a non-collection root are described")
    func structure() {
        let line = collection(
            """
            {"type":"Feature","geometry":{"type":"LineString","coordinates":[[1,2],[3,4]]}}
            """)
        #expect(
            throws: DataError.invalidFeature(
                line: 2, column: "features[0].geometry.type",
                reason: "expected \"Point\", got LineString")
        ) {
            try GeoJSONParser.parseFeatureCollection(line)
        }
        let badID = collection(
            """
            {"type":"Feature","id":-3,"geometry":{"type":"Point","coordinates":[1,2]}}
            """)
        #expect(throws: DataError.invalidID(line: 2, column: "features[0].id", value: "-3")) {
            try GeoJSONParser.parseFeatureCollection(badID)
        }
        #expect(throws: DataError.invalidFeature(line: 1, column: "type", reason: "expected \"FeatureCollection\"")) {
            try GeoJSONParser.parseFeatureCollection(Array("{\"type\":\"Feature\"}".utf8))
        }
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
}
