import Testing

@testable import CoatyCommunication

/// A broker down for hours must not fill the journal, and the reason must always be seen.
@Suite struct ConnectionFailureLogTests {
    @Test func logsTheFirstFailureAndEachNewReasonAndRepeatsOncePerPeriodWithACount() {
        let log = ConnectionFailureLog(repeatPeriod: .seconds(600))
        let start = ContinuousClock.now
        func at(_ seconds: Int) -> ContinuousClock.Instant { start.advanced(by: .seconds(seconds)) }

        #expect(
            log.failed("connection refused", at: at(0)) == .failing(reason: "connection refused", unloggedBefore: 0))
        // Every 30 s for ten minutes: quiet.
        for second in stride(from: 30, to: 600, by: 30) {
            #expect(log.failed("connection refused", at: at(second)) == nil)
        }
        #expect(log.lastReason == "connection refused")
        #expect(
            log.failed("connection refused", at: at(600)) == .stillFailing(reason: "connection refused", attempts: 20))
        #expect(log.failed("connection refused", at: at(630)) == nil)
        // A new reason at once, with what was not logged before it.
        #expect(
            log.failed("TLS: certificate verify failed", at: at(660))
                == .failing(reason: "TLS: certificate verify failed", unloggedBefore: 1))
        #expect(log.lastReason == "TLS: certificate verify failed")

        // A connect forgets it all: the next failure is the first again.
        #expect(log.reset() == 23)
        #expect(log.lastReason == nil)
        #expect(
            log.failed("connection refused", at: at(700)) == .failing(reason: "connection refused", unloggedBefore: 0))
    }

    /// Reasons that alternate on every attempt are new each time; a budget keeps them to a few lines per period too.
    @Test func alternatingReasonsAreBounded() {
        let log = ConnectionFailureLog(
            repeatPeriod: .seconds(600), changeBudget: LogBudget(limit: 3, per: .seconds(600)))
        let start = ContinuousClock.now
        let messages = (0..<100).compactMap { attempt in
            log.failed(
                attempt.isMultiple(of: 2) ? "connection refused" : "no route to host",
                at: start.advanced(by: .seconds(attempt)))
        }
        #expect(messages.count == 3)
        // Past the period, the budget admits changes again and says how many attempts went unlogged.
        #expect(
            log.failed("connection refused", at: start.advanced(by: .seconds(700)))
                == .failing(reason: "connection refused", unloggedBefore: 97))
    }
}
