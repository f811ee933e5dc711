import Testing

@testable import PinwheelCore

@Suite("JSON reader")
struct JSONReaderTests {
    func reason(_ text: String) -> String? {
        do {
            _ = try JSONReader.parse(text)
            return nil
        } catch {
            return error.description
        }
    }

    @Test("reads every kind of value")
    func kinds() throws {
        let v = try JSONReader.parse(#" {"a":[1,-2.5e3,true,false,null,"x"],"b":{},"c":[]} "#)
        guard case .object(let o) = v else {
            Issue.record("not an object")
            return
        }
        #expect(o["a"] == .array([.number(1), .number(-2500), .bool(true), .bool(false), .null, .string("x")]))
        #expect(o["b"] == .object(JSONObject(members: [:], offset: 41)))
        #expect(o["c"] == .array([]))
    }

    @Test("decodes escapes, surrogate pairs and raw UTF-8")
    func strings() throws {
        let v = try JSONReader.parse(#""a\"b\\c\/d\n\t\r\b\f\u00e9\ud83d\ude00 é""#)
        #expect(v == .string("a\"b\\c/d\n\t\r\u{8}\u{C}é😀 é"))
    }

    @Test("NaN and Infinity literals read as non-finite numbers so validation can name the field")
    func nonFinite() throws {
        guard case .array(let a) = try JSONReader.parse("[NaN,Infinity,-Infinity,1e999]") else {
            Issue.record("not an array")
            return
        }
        #expect(a.count == 4)
        if case .number(let d) = a[0] { #expect(d.isNaN) } else { Issue.record("NaN not a number") }
        #expect(a[1] == .number(.infinity) && a[2] == .number(-.infinity) && a[3] == .number(.infinity))
    }

    @Test("malformed text is rejected with line and column")
    func malformed() {
        #expect(reason("{\"a\":1,}") == "unexpected '}', expected a string key at line 1, column 8")
        #expect(reason("[1,\n2") == "unexpected end of input inside an array at line 2, column 2")
        #expect(reason("01") == "malformed number, leading zeros are not allowed at line 1, column 1")
        #expect(reason("\"abc") == "unterminated string at line 1, column 1")
        #expect(reason("\"a\u{1}\"") == "unescaped control character in a string at line 1, column 3")
        #expect(reason("\"\\ud800\"") == "unpaired surrogate in a \\u escape at line 1, column 8")
        #expect(reason("\"\\x\"") == "invalid escape '\\x' in a string at line 1, column 2")
        #expect(reason("1 2") == "unexpected text after the JSON value at line 1, column 3")
        #expect(reason("") == "unexpected end of input, expected a value at line 1, column 1")
        #expect(reason("tru") == "unexpected 't', expected a value at line 1, column 1")
        #expect(reason("-") == "malformed number, expected a digit at line 1, column 2")
        #expect(reason("1.") == "malformed number, expected a digit after '.' at line 1, column 3")
    }

    @Test("invalid UTF-8 inside a string is rejected")
    func invalidUTF8() {
        #expect(throws: JSONReader.Failure.self) { try JSONReader.parse([0x22, 0xFF, 0x22]) }
    }

    @Test("nesting beyond the limit is rejected instead of exhausting the stack")
    func depth() {
        let deep = String(repeating: "[", count: 100_000)
        #expect(reason(deep) == "nesting deeper than 128 at line 1, column 129")
        let ok = String(repeating: "[", count: 128) + String(repeating: "]", count: 128)
        #expect(reason(ok) == nil)
    }
}
