import Testing

@testable import CoatyCommunication

@Suite struct LogBudgetTests {
    @Test func logsTheFirstFewPerPeriodThenSaysHowManyWereNot() {
        let budget = LogBudget(limit: 3, per: .seconds(10))
        let start = ContinuousClock.now
        let first = (0..<10).map { budget.admit(at: start.advanced(by: .milliseconds($0))) }
        #expect(
            first == [.log(suppressedBefore: 0), .log(suppressedBefore: 0), .log(suppressedBefore: 0)]
                + Array(repeating: .suppress, count: 7))
        #expect(budget.admit(at: start.advanced(by: .seconds(11))) == .log(suppressedBefore: 7))
        #expect(budget.admit(at: start.advanced(by: .seconds(12))) == .log(suppressedBefore: 0))
    }
}
