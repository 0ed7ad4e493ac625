import CoatyJSON
import CoatyModel
import Testing

@testable import CoatyIORouting

/// The value types of PWM outputs and pulse counters are checked like the built-in ones: an actor of the type rejects
/// a value that is not of it.
@Suite struct EdgeValueTypeTests {
    private func check(_ valueType: String, _ value: JSONValue) throws -> String? {
        let check = try #require(IoValueTypes.standard.check(of: valueType))
        return check(.json(value))
    }

    @Test func dutiesArePercentages() throws {
        #expect(try check(EdgeValueType.dutyPercent, 0) == nil)
        #expect(try check(EdgeValueType.dutyPercent, 37.5) == nil)
        #expect(try check(EdgeValueType.dutyPercent, 100) == nil)
        #expect(try check(EdgeValueType.dutyPercent, 100.5) == "expected a duty in percent, 0...100")
        #expect(try check(EdgeValueType.dutyPercent, -1) == "expected a duty in percent, 0...100")
        #expect(try check(EdgeValueType.dutyPercent, "50") == "expected a duty in percent, 0...100")
    }

    @Test func countsAreWholeNumbersNotBelowZero() throws {
        #expect(try check(EdgeValueType.count, 0) == nil)
        #expect(try check(EdgeValueType.count, 123_456_789) == nil)
        #expect(try check(EdgeValueType.count, 1.5) == "expected a count, a whole number not below zero")
        #expect(try check(EdgeValueType.count, -2) == "expected a count, a whole number not below zero")
    }

    @Test func ratesAreNumbersNotBelowZero() throws {
        for type in [EdgeValueType.ratePerSecond, EdgeValueType.ratePerMinute, EdgeValueType.ratePerHour] {
            #expect(try check(type, 0) == nil)
            #expect(try check(type, 12.345) == nil)
            #expect(try check(type, -0.5) == "expected a rate, a number not below zero")
            #expect(try check(type, true) == "expected a rate, a number not below zero")
        }
    }
}
