import Foundation
import Testing

@testable import PinwheelCore

@Suite("CSV parser")
struct CSVParserTests {
    func parse(_ text: String, _ policy: BadRowPolicy = .fail) throws -> ParsedDataset {
        try CSVParser.parse(Array(text.utf8), badRows: policy)
    }

    func error(_ text: String) -> DataError? {
        do {
            _ = try parse(text)
            return nil
        } catch let e as DataError {
            return e
        } catch {
            return nil
        }
    }

    @Test("reads lat/lon columns and keeps the others as properties, ids by row position")
    func basic() throws {
        let parsed = try parse("lat,lon,name,cc\n42.5,1.6,El Tarter,AD\n-33.9,151.2,Sydney,AU\n")
        let d = parsed.dataset
        #expect(d.ids == [0, 1])
        #expect(d.coordinates == [1.6, 42.5, 151.2, -33.9])
        #expect(d.properties.columns == ["name", "cc"])
        #expect(d.properties.value(row: 1, column: 0) == "Sydney")
        #expect(d.properties.value(row: 1, column: 1) == "AU")
        #expect(parsed.skipped == 0)
    }

    @Test("accepts latitude/longitude and lng, any case, in any column order, with an id column")
    func columnNames() throws {
        let a = try parse("Name,LONGITUDE,Latitude,ID\nx,10,20,7\n").dataset
        #expect(a.ids == [7] && a.lat(0) == 20 && a.lon(0) == 10)
        #expect(a.properties.columns == ["Name"])
        let b = try parse("lng,lat\n-1.5,2.5\n").dataset
        #expect(b.lat(0) == 2.5 && b.lon(0) == -1.5)
    }

    @Test("quoted fields keep commas, doubled quotes and line breaks")
    func quoting() throws {
        let text = "lat,lon,name\n1,2,\"Paris, \"\"la ville\"\"\"\n3,4,\"two\nlines\"\n5,6,\"\"\n"
        let d = try parse(text).dataset
        #expect(d.count == 3)
        #expect(d.properties.value(row: 0, column: 0) == "Paris, \"la ville\"")
        #expect(d.properties.value(row: 1, column: 0) == "two\nlines")
        #expect(d.properties.value(row: 2, column: 0) == nil)
    }

    @Test("a column of JSON numbers holds numbers, one of true and false booleans, any other strings")
    func types() throws {
        let text = "lat,lon,pop,zip,open,mixed,blank\n1,2,12,012,true,1,\n3,4,,7,false,x,\n5,6,-1.5e3,9,,true,\n"
        let d = try parse(text).dataset
        #expect(d.properties.columns == ["pop", "zip", "open", "mixed", "blank"])
        let rows = (0..<3).map { r in (0..<5).map { d.properties.value(row: r, column: $0) } }
        #expect(rows[0] == [.number(12), "012", .bool(true), "1", nil])
        #expect(rows[1] == [nil, "7", .bool(false), "x", nil])
        #expect(rows[2] == [.number(-1500), "9", nil, "true", nil])
        for (text, ok) in [("0", true), ("-0.5", true), ("1e3", true), ("1E+3", true), ("012", false), ("+1", false)]
            + [(".5", false), ("5.", false), ("1e", false), ("-", false), ("", false), ("0x1", false)]
        {
            #expect(CSVParser.isJSONNumber(text) == ok, "\(text)")
        }
    }

    @Test("text ids make named points a producer's change reaches by the same name")
    func textIDs() throws {
        let d = try parse("id,lat,lon,kind\nveh-1,1,2,bus\n17,3,4,tram\n").dataset
        #expect(d.ids == [PointKey.firstNamedID, PointKey.firstNamedID + 1])
        #expect(d.names == [PointKey.firstNamedID: "veh-1", PointKey.firstNamedID + 1: "17"])
        var table = PointTable(d)
        table.apply(.upsert(.name("veh-1"), lat: 5, lon: 6, properties: ["kind": "bus"]), version: 1)
        #expect(table.count == 2 && table.coordinate(of: .name("veh-1")) == Coordinate(lat: 5, lon: 6))
        table.apply(.upsert(.name("veh-3"), lat: 7, lon: 8, properties: [:]), version: 2)
        #expect(table.id(of: .name("veh-3")) == PointKey.firstNamedID + 2)
        #expect(error("id,lat,lon\nveh-1,1,2\nveh-1,3,4\n") == .duplicateID(line: 3, column: "id", value: "\"veh-1\""))
        let long = String(repeating: "x", count: PointKey.maxNameBytes + 1)
        #expect(error("id,lat,lon\nveh-1,1,2\n\(long),3,4\n") == .invalidName(line: 3, column: "id", value: long))
    }

    @Test("CRLF line ends, a byte-order mark, blank lines and no final newline are fine")
    func lineEnds() throws {
        let d = try parse("\u{FEFF}lat,lon\r\n1,2\r\n\r\n3,4").dataset
        #expect(d.count == 2)
        #expect(d.ids == [0, 1])
        #expect(d.lat(1) == 3)
    }

    @Test("a latitude outside -90...90 names the line, column and value")
    func badLatitude() {
        #expect(error("lat,lon\n1,2\n91.3,5\n") == .invalidLatitude(line: 3, column: "lat", value: "91.3"))
    }

    @Test("a longitude that is not a number names the line, column and value")
    func badLongitude() {
        #expect(error("latitude,lng\n1,abc\n") == .invalidLongitude(line: 2, column: "lng", value: "abc"))
        #expect(error("lat,lon\n1,181\n") == .invalidLongitude(line: 2, column: "lon", value: "181"))
        #expect(error("lat,lon\n1,\n") == .invalidLongitude(line: 2, column: "lon", value: ""))
        #expect(error("lat,lon\nNaN,1\n") == .invalidLatitude(line: 2, column: "lat", value: "NaN"))
    }

    @Test("after a first numeric id, ids must be whole numbers below 2^32 and unique")
    func badIDs() {
        #expect(error("id,lat,lon\n1,1,2\n4294967296,1,2\n") == .invalidID(line: 3, column: "id", value: "4294967296"))
        #expect(error("id,lat,lon\n1,1,2\n-1,1,2\n") == .invalidID(line: 3, column: "id", value: "-1"))
        #expect(error("id,lat,lon\n1,1,2\n1.5,1,2\n") == .invalidID(line: 3, column: "id", value: "1.5"))
        #expect(error("id,lat,lon\n9,1,2\n9,3,4\n") == .duplicateID(line: 3, column: "id", value: "9"))
    }

    @Test("a row with the wrong number of fields names its line, counting lines inside quotes")
    func fieldCount() {
        #expect(error("lat,lon,name\n1,2,\"a\nb\"\n3,4\n") == .wrongFieldCount(line: 4, expected: 3, found: 2))
    }

    @Test("quote problems name the line and column")
    func quoteProblems() {
        #expect(error("lat,lon,name\n1,2,\"open\n") == .unterminatedQuote(line: 2, column: "name"))
        #expect(error("lat,lon,name\n1,2,\"a\"b\n") == .strayQuote(line: 2, column: "name"))
    }

    @Test("a header without coordinates, an empty input and repeated columns are errors")
    func headerProblems() {
        #expect(
            error("name,lon\nx,1\n")
                == .missingColumn(line: 1, accepted: ["lat", "latitude"], header: ["name", "lon"]))
        #expect(error("") == .empty)
        #expect(error("\n\n") == .empty)
        #expect(error("lat,lon,Lat\n") == .duplicateColumn(line: 1, column: "Lat"))
    }

    @Test("invalid UTF-8 in a property names the line and column")
    func invalidUTF8() {
        var bytes = Array("lat,lon,name\n1,2,".utf8)
        bytes += [0xC3, 0x28, 0x0A]
        #expect(throws: DataError.invalidUTF8(line: 2, column: "name")) { try CSVParser.parse(bytes) }
    }

    @Test("skip mode leaves bad rows out, counts them, keeps their errors and keeps other ids stable")
    func skip() throws {
        let parsed = try parse("lat,lon\n1,2\n100,2\n3,x\n5,6\n", .skip)
        #expect(parsed.dataset.ids == [0, 3])
        #expect(parsed.skipped == 2)
        #expect(
            parsed.errors == [
                .invalidLatitude(line: 3, column: "lat", value: "100"),
                .invalidLongitude(line: 4, column: "lon", value: "x"),
            ])
    }

    @Test("error descriptions name line, column and value")
    func descriptions() {
        let e = DataError.invalidLatitude(line: 42, column: "lat", value: "91.3")
        #expect(e.description == "line 42, column \"lat\": latitude \"91.3\" is not a number in -90...90")
        #expect(e.line == 42)
    }

    @Test("the GeoNames 145k file parses completely")
    func geonames() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../data/geonames_rg_cities1000_145k.csv")
        let bytes = try [UInt8](Data(contentsOf: url))
        let parsed = try CSVParser.parse(bytes)
        #expect(parsed.dataset.count == 144_563)
        #expect(parsed.dataset.properties.columns == ["name", "cc"])
        #expect(parsed.dataset.properties.value(row: 0, column: 0) == "El Tarter")
        #expect(parsed.dataset.lat(0) == 42.57952)
    }

    @Test("three bad rows among 100,000 are skipped and counted, the other 99,997 kept with their ids")
    func threeBadRowsInMany() throws {
        var text = "id,lat,lon,name\n"
        let bad: [Int: String] = [10: "10,91,0,too far north", 50_000: "50000,1,2", 99_999: "99999,1,east,x"]
        for row in 0..<100_000 {
            text += bad[row] ?? "\(row),\(Double(row % 180) - 89.5),\(Double(row % 360) - 179.5),p\(row)"
            text += "\n"
        }
        let parsed = try CSVParser.parse(Array(text.utf8), badRows: .skip)
        #expect(parsed.skipped == 3)
        #expect(parsed.dataset.count == 99_997)
        #expect(
            parsed.errors == [
                .invalidLatitude(line: 12, column: "lat", value: "91"),
                .wrongFieldCount(line: 50_002, expected: 4, found: 3),
                .invalidLongitude(line: 100_001, column: "lon", value: "east"),
            ])
        #expect(!parsed.dataset.ids.contains(10) && parsed.dataset.ids.contains(11))
        #expect(throws: DataError.invalidLatitude(line: 12, column: "lat", value: "91")) {
            try CSVParser.parse(Array(text.utf8), badRows: .fail)
        }
    }
}
