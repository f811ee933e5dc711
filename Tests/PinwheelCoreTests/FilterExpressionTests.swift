import Testing

@testable import PinwheelCore

@Suite("Filter expressions")
struct FilterExpressionTests {
    static func filter(_ text: String) throws -> FilterExpression {
        try FilterExpression(json: JSONReader.parse(Array(text.utf8)))
    }

    static func refusal(_ text: String) throws -> String? {
        let json = try JSONReader.parse(Array(text.utf8))
        do throws(FilterError) {
            _ = try FilterExpression(json: json)
            return nil
        } catch {
            return error.description
        }
    }

    static let bus: [String: PropertyValue] = [
        "kind": .string("bus"), "speed": .number(12), "late": .bool(true), "line": .string("42"),
    ]

    @Test("equality, ranges, existence and booleans read typed properties as MapLibre does")
    func basics() throws {
        let cases: [(String, Bool)] = [
            (#"["==", ["get", "kind"], "bus"]"#, true),
            (#"["==", "bus", ["get", "kind"]]"#, true),
            (#"["!=", ["get", "kind"], "bus"]"#, false),
            (#"[">", ["get", "speed"], 10]"#, true),
            (#"[">=", ["get", "speed"], 12]"#, true),
            (#"["<", ["get", "speed"], 12]"#, false),
            (#"["<=", 12, ["get", "speed"]]"#, true),
            (#"["==", ["get", "speed"], "12"]"#, false),
            (#"["==", ["get", "line"], 42]"#, false),
            (#"["==", ["get", "line"], "42"]"#, true),
            (#"["has", "late"]"#, true),
            (#"["has", "colour"]"#, false),
            (#"["get", "late"]"#, true),
            (#"["get", "kind"]"#, false),
            (#"["==", ["get", "colour"], null]"#, true),
            (#"["!=", ["get", "kind"], null]"#, true),
            (#"["==", ["get", "late"], true]"#, true),
            (#"[">", ["get", "kind"], "a"]"#, true),
            (#"true"#, true),
            (#"false"#, false),
        ]
        for (text, expected) in cases {
            #expect(try Self.filter(text).matches(Self.bus) == expected, "\(text)")
        }
    }

    @Test("an ordering of a missing property or of different types is false, and its negation true")
    func orderingAcrossTypes() throws {
        #expect(try !Self.filter(#"["<", ["get", "colour"], 5]"#).matches(Self.bus))
        #expect(try !Self.filter(#"["<", ["get", "kind"], 5]"#).matches(Self.bus))
        #expect(try !Self.filter(#"[">", ["get", "speed"], "5"]"#).matches(Self.bus))
        #expect(try Self.filter(#"["!", ["<", ["get", "colour"], 5]]"#).matches(Self.bus))
    }

    @Test("all, any and ! combine, empty all holds and empty any does not")
    func logic() throws {
        let text = #"["all", ["==", ["get", "kind"], "bus"], ["any", [">", ["get", "speed"], 100], ["get", "late"]]]"#
        #expect(try Self.filter(text).matches(Self.bus))
        #expect(try !Self.filter(#"["!", ["get", "late"]]"#).matches(Self.bus))
        #expect(try Self.filter(#"["all"]"#).matches(Self.bus))
        #expect(try !Self.filter(#"["any"]"#).matches(Self.bus))
    }

    @Test("in looks a property up in a literal list; match picks the first label equal to it")
    func membership() throws {
        #expect(try Self.filter(#"["in", ["get", "kind"], ["literal", ["tram", "bus"]]]"#).matches(Self.bus))
        #expect(try !Self.filter(#"["in", ["get", "kind"], ["literal", ["tram", 1]]]"#).matches(Self.bus))
        #expect(try !Self.filter(#"["in", ["get", "colour"], ["literal", ["red"]]]"#).matches(Self.bus))
        #expect(try Self.filter(#"["match", ["get", "kind"], ["tram", "bus"], true, false]"#).matches(Self.bus))
        #expect(try !Self.filter(#"["match", ["get", "kind"], "bus", false, true]"#).matches(Self.bus))
        #expect(try Self.filter(#"["match", ["get", "colour"], "red", false, true]"#).matches(Self.bus))
        let nested = #"["match", ["get", "kind"], "bus", [">", ["get", "speed"], 20], "tram", true, false]"#
        #expect(try !Self.filter(nested).matches(Self.bus))
    }

    @Test("a refused filter names the position of the offending element")
    func errors() throws {
        let cases: [(String, String)] = [
            (#"["all", ["==", ["get", "a"], 1], [">", ["get", "b"], {}]]"#, "filter[2][2]: expected [\"get\", name]"),
            (#"["all", ["<", ["get", "a"], true]]"#, "filter[1][2]: expected a number or a string to order by"),
            (#"["==", ["get", 3], 1]"#, "filter[1][1]: expected a property name"),
            (#"["within", 1]"#, "filter[0]: unknown operator \"within\""),
            (#""kind""#, "filter: expected a filter"),
            (#"[]"#, "filter: expected an expression, got an empty array"),
            (#"[1, 2]"#, "filter[0]: expected an operator name, got a number"),
            (#"["==", "kind", "bus"]"#, "filter: compares two constants"),
            (#"["!", true, false]"#, "filter: expected [\"!\", filter], got 3 elements"),
            (#"["in", "bus", ["get", "kind"]]"#, "filter[2]: expected [\"literal\", [values…]]"),
            (#"["in", ["get", "k"], ["literal", [[1]]]]"#, "filter[2][1][0]: expected a string, number or boolean"),
            (#"["match", ["get", "k"], "a", true, "a", false, true]"#, "filter[4]: label \"a\" appears twice"),
            (#"["match", ["get", "k"], true, true, false]"#, "filter[2]: expected a string or number"),
            (#"["match", ["get", "k"], "a", true]"#, "filter: expected [\"match\""),
            (#"["==", ["get", "k"], "a", ["collator", {}]]"#, "filter[3]: collators are not supported"),
            (#"["any", ["has", "a"], ["match", ["get", "k"], "a", 3, false]]"#, "filter[2][3]: expected a filter"),
        ]
        for (text, prefix) in cases {
            let message = try Self.refusal(text)
            #expect(message?.hasPrefix(prefix) == true, "\(text) gave \(message ?? "no error")")
        }
        var deep = "true"
        for _ in 0..<40 { deep = "[\"!\", \(deep)]" }
        #expect(try Self.refusal(deep)?.contains("nested deeper than 32") == true)
    }

    @Test("filters that say the same thing share one canonical key")
    func canonicalKeys() throws {
        let groups: [[String]] = [
            [
                #"["all", ["==", ["get", "kind"], "bus"], [">", ["get", "speed"], 10]]"#,
                #"["all", ["<", 10, ["get", "speed"]], ["==", "bus", ["get", "kind"]]]"#,
                #"["all", ["all", [">", ["get", "speed"], 10]], true, ["in", ["get", "kind"], ["literal", ["bus", "bus"]]]]"#,
            ],
            [
                #"["in", ["get", "kind"], ["literal", ["tram", "bus"]]]"#,
                #"["match", ["get", "kind"], ["bus", "tram"], true, false]"#,
            ],
            [
                #"["!=", ["get", "kind"], "bus"]"#, #"["!", ["==", ["get", "kind"], "bus"]]"#,
                #"["match", ["get", "kind"], "bus", false, true]"#,
            ],
            [#"["get", "late"]"#, #"["==", ["get", "late"], true]"#, #"["!", ["!", ["get", "late"]]]"#],
            [#"true"#, #"["all"]"#, #"["any", ["has", "a"], true]"#],
        ]
        var keys: [String] = []
        for group in groups {
            let groupKeys = try Set(group.map { try Self.filter($0).key })
            #expect(groupKeys.count == 1, "\(group) gave \(groupKeys)")
            keys.append(contentsOf: groupKeys)
        }
        #expect(Set(keys).count == groups.count, "different filters keep different keys")
    }

    @Test("the canonical form reads back to itself and selects the same points as the filter written")
    func canonicalRoundTrip() throws {
        var random = SeededRandom(seed: 47)
        for _ in 0..<500 {
            let f = RandomFilter.make(&random, depth: 3)
            let canonical = f.canonical
            let reread = try Self.filter(canonical.text)
            #expect(reread.canonical == canonical, "\(f.text)")
            for _ in 0..<20 {
                let p = RandomFilter.properties(&random)
                #expect(f.matches(p) == canonical.matches(p), "\(f.text) vs \(canonical.text) on \(p)")
            }
        }
    }

    @Test("the effective filter is the scope AND the requested filter, and no filter at all lets everything through")
    func effective() throws {
        let scope = try Self.filter(#"["==", ["get", "tenant"], "acme"]"#)
        let asked = try Self.filter(#"[">", ["get", "speed"], 10]"#)
        let both = EffectiveFilter(scope: scope, requested: asked)
        #expect(both == EffectiveFilter(scope: asked, requested: scope))
        #expect(both.expression?.matches(["tenant": .string("acme"), "speed": .number(11)]) == true)
        #expect(both.expression?.matches(["tenant": .string("other"), "speed": .number(11)]) == false)
        #expect(EffectiveFilter(scope: nil, requested: .constant(true)).isEverything)
        #expect(EffectiveFilter.everything.key.isEmpty)
        #expect(EffectiveFilter(requested: asked).key == asked.key)
    }
}

/// Random filters over a few properties of every type, for property tests.
enum RandomFilter {
    static let names = ["kind", "speed", "late", "class"]
    static let strings = ["bus", "tram", "city", "town", "42"]

    static func value(_ random: inout SeededRandom) -> PropertyValue {
        switch random.next() % 3 {
        case 0: .string(strings[Int(random.next() % UInt64(strings.count))])
        case 1: .number(Double(random.next() % 20))
        default: .bool(random.next() % 2 == 0)
        }
    }

    static func properties(_ random: inout SeededRandom) -> [String: PropertyValue] {
        var p: [String: PropertyValue] = [:]
        for name in names where random.next() % 4 != 0 { p[name] = value(&random) }
        return p
    }

    static func get(_ random: inout SeededRandom) -> FilterOperand {
        .get(names[Int(random.next() % UInt64(names.count))])
    }

    static func make(_ random: inout SeededRandom, depth: Int) -> FilterExpression {
        let pick = random.next() % (depth > 0 ? 9 : 5)
        switch pick {
        case 0: return .has(names[Int(random.next() % UInt64(names.count))])
        case 1:
            let ops = FilterComparison.allCases
            let op = ops[Int(random.next() % UInt64(ops.count))]
            var v = value(&random)
            if op != .equal && op != .notEqual, case .bool = v { v = .number(Double(random.next() % 20)) }
            return random.next() % 2 == 0
                ? .compare(op, get(&random), .literal(v)) : .compare(op, .literal(v), get(&random))
        case 2: return .oneOf(get(&random), (0..<Int(random.next() % 4)).map { _ in value(&random) })
        case 3: return .isTrue(names[Int(random.next() % UInt64(names.count))])
        case 4: return .compare(.equal, get(&random), .literal(nil))
        case 5: return .all((0..<Int(random.next() % 3)).map { _ in make(&random, depth: depth - 1) })
        case 6: return .any((0..<Int(random.next() % 3)).map { _ in make(&random, depth: depth - 1) })
        case 7: return .not(make(&random, depth: depth - 1))
        default:
            var used: [PropertyValue] = []
            var arms: [FilterMatchArm] = []
            for _ in 0..<(1 + Int(random.next() % 3)) {
                var label: PropertyValue = .string(strings[Int(random.next() % UInt64(strings.count))])
                if random.next() % 2 == 0 { label = .number(Double(random.next() % 20)) }
                guard !used.contains(label) else { continue }
                used.append(label)
                let result =
                    random.next() % 2 == 0
                    ? FilterExpression.constant(random.next() % 2 == 0) : make(&random, depth: depth - 1)
                arms.append(FilterMatchArm(labels: [label], result: result))
            }
            return .match(get(&random), arms, fallback: .constant(random.next() % 2 == 0))
        }
    }
}
