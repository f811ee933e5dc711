extension FilterExpression {
    /// The same filter in the one form every filter that says the same thing in these ways shares, so
    /// sessions can share the index it selects: `!=` as `!` of `==`, a constant on the right,
    /// `["get", name]` as `== true`, a one-value `in` as `==`, a `match` of constants as `in`, `all`
    /// and `any` flattened, deduplicated and sorted, constants folded, `!` of `!` dropped.
    public var canonical: FilterExpression {
        switch self {
        case .constant, .has:
            return self
        case .isTrue(let name):
            return .compare(.equal, .get(name), .literal(.bool(true)))
        case .compare(let op, let a, let b):
            if op == .notEqual { return FilterExpression.not(.compare(.equal, a, b)).canonical }
            if case .literal = a, case .get = b { return FilterExpression.compare(op.swapped, b, a).canonical }
            if case .get(let x) = a, case .get(let y) = b, op == .equal, y < x { return .compare(op, b, a) }
            return self
        case .oneOf(let a, let values):
            var distinct: [PropertyValue] = []
            for v in values where !distinct.contains(where: { $0.strictlyEquals(v) }) { distinct.append(v) }
            distinct.sort { $0.description.utf8.lexicographicallyPrecedes($1.description.utf8) }
            switch distinct.count {
            case 0: return .constant(false)
            case 1: return FilterExpression.compare(.equal, a, .literal(distinct[0])).canonical
            default: return .oneOf(a, distinct)
            }
        case .match(let a, let arms, let fallback):
            let arms = arms.map { FilterMatchArm(labels: $0.labels, result: $0.result.canonical) }
            let fallback = fallback.canonical
            guard case .constant(let otherwise) = fallback else { return .match(a, arms, fallback: fallback) }
            var differing: [PropertyValue] = []
            for arm in arms {
                guard case .constant(let b) = arm.result else { return .match(a, arms, fallback: fallback) }
                if b != otherwise { differing.append(contentsOf: arm.labels) }
            }
            // Labels are unique, so the labels whose result differs from the fallback say it all.
            let listed = FilterExpression.oneOf(a, differing)
            return (otherwise ? FilterExpression.not(listed) : listed).canonical
        case .not(let f):
            switch f.canonical {
            case .constant(let b): return .constant(!b)
            case .not(let inner): return inner
            case let g: return .not(g)
            }
        case .all(let parts):
            return Self.joined(parts, all: true)
        case .any(let parts):
            return Self.joined(parts, all: false)
        }
    }

    /// `all` (or `any`) of the parts' canonical forms, flattened, without repeats, in text order.
    private static func joined(_ parts: [FilterExpression], all: Bool) -> FilterExpression {
        var flat: [String: FilterExpression] = [:]
        var pending = parts
        while let part = pending.popLast() {
            switch part.canonical {
            case .constant(let b):
                // `true` changes no `all`, `false` no `any`; the other constant decides the whole.
                if b != all { return .constant(b) }
            case .all(let inner) where all: pending.append(contentsOf: inner)
            case .any(let inner) where !all: pending.append(contentsOf: inner)
            case let f: flat[f.text] = f
            }
        }
        let sorted = flat.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { flat[$0]! }
        switch sorted.count {
        case 0: return .constant(all)
        case 1: return sorted[0]
        default: return all ? .all(sorted) : .any(sorted)
        }
    }

    /// The canonical form's JSON text: equal for filters that share an index, and the key they share
    /// it by.
    public var key: String { canonical.text }

    /// The expression as JSON text, as it stands (see ``key`` for the canonical one).
    public var text: String {
        var writer = JSONWriter(capacity: 64)
        write(into: &writer)
        return writer.text
    }

    /// Appends the expression's JSON form.
    public func write(into w: inout JSONWriter) {
        switch self {
        case .constant(let b):
            w.bool(b)
        case .has(let name):
            w.raw("[\"has\",")
            w.string(name)
            w.byte(UInt8(ascii: "]"))
        case .isTrue(let name):
            w.raw("[\"get\",")
            w.string(name)
            w.byte(UInt8(ascii: "]"))
        case .compare(let op, let a, let b):
            w.byte(UInt8(ascii: "["))
            w.string(op.rawValue)
            w.byte(UInt8(ascii: ","))
            a.write(into: &w)
            w.byte(UInt8(ascii: ","))
            b.write(into: &w)
            w.byte(UInt8(ascii: "]"))
        case .oneOf(let a, let values):
            w.raw("[\"in\",")
            a.write(into: &w)
            w.raw(",[\"literal\",[")
            for (k, v) in values.enumerated() {
                if k > 0 { w.byte(UInt8(ascii: ",")) }
                v.write(into: &w)
            }
            w.raw("]]]")
        case .match(let a, let arms, let fallback):
            w.raw("[\"match\",")
            a.write(into: &w)
            for arm in arms {
                w.byte(UInt8(ascii: ","))
                if arm.labels.count == 1 {
                    arm.labels[0].write(into: &w)
                } else {
                    w.byte(UInt8(ascii: "["))
                    for (k, v) in arm.labels.enumerated() {
                        if k > 0 { w.byte(UInt8(ascii: ",")) }
                        v.write(into: &w)
                    }
                    w.byte(UInt8(ascii: "]"))
                }
                w.byte(UInt8(ascii: ","))
                arm.result.write(into: &w)
            }
            w.byte(UInt8(ascii: ","))
            fallback.write(into: &w)
            w.byte(UInt8(ascii: "]"))
        case .all(let parts), .any(let parts):
            w.raw(self.isAll ? "[\"all\"" : "[\"any\"")
            for p in parts {
                w.byte(UInt8(ascii: ","))
                p.write(into: &w)
            }
            w.byte(UInt8(ascii: "]"))
        case .not(let f):
            w.raw("[\"!\",")
            f.write(into: &w)
            w.byte(UInt8(ascii: "]"))
        }
    }

    private var isAll: Bool { if case .all = self { true } else { false } }
}

extension FilterOperand {
    /// Appends `["get", name]` or the literal (`null` for nil).
    func write(into w: inout JSONWriter) {
        switch self {
        case .get(let name):
            w.raw("[\"get\",")
            w.string(name)
            w.byte(UInt8(ascii: "]"))
        case .literal(let v?): v.write(into: &w)
        case .literal(nil): w.null()
        }
    }
}
