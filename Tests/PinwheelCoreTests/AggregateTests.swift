import Testing

@testable import PinwheelCore

@Suite("Aggregates")
struct AggregateTests {
    @Test("NAME=OP(COLUMN) reads every operation, spaces and case in OP aside")
    func parsing() throws {
        #expect(
            try Aggregate(parsing: "people=sum(population)")
                == Aggregate(name: "people", operation: .sum, column: "population"))
        #expect(
            try Aggregate(parsing: " low = MIN( elevation ) ")
                == Aggregate(name: "low", operation: .min, column: "elevation"))
        for op in Aggregate.Operation.allCases {
            #expect(try Aggregate(parsing: "a=\(op.rawValue)(b)").operation == op)
        }
    }

    @Test("a malformed aggregate or an unknown operation says what is expected")
    func malformed() {
        #expect(
            throws: IndexError.invalidAggregate(
                text: "sum(pop)", reason: "expected NAME=OP(COLUMN), e.g. people=sum(population)")
        ) {
            try Aggregate(parsing: "sum(pop)")
        }
        #expect(
            throws: IndexError.invalidAggregate(
                text: "a=median(pop)", reason: "\"median\" is not one of sum, min, max, mean")
        ) {
            try Aggregate(parsing: "a=median(pop)")
        }
        #expect(throws: IndexError.invalidAggregate(text: "=sum(pop)", reason: "the name is empty")) {
            try Aggregate(parsing: "=sum(pop)")
        }
        #expect(throws: IndexError.invalidAggregate(text: "a=sum()", reason: "the column is empty")) {
            try Aggregate(parsing: "a=sum()")
        }
    }

    @Test("min and max pass over blank cells, which sum and mean count as 0")
    func blanks() {
        let min = Aggregate(name: "m", operation: .min, column: "c")
        #expect(min.combine(min.combine(min.identity, .nan), 3) == 3)
        #expect(min.combine(3, .nan) == 3)
        #expect(min.combine(min.identity, .nan).isNaN)
        let mean = Aggregate(name: "m", operation: .mean, column: "c")
        #expect(mean.value(reduced: mean.combine(mean.combine(mean.identity, 4), 0), count: 2) == 2)
    }
}
