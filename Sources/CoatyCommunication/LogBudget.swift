import Synchronization

/// How many warnings of one kind may be logged per period. A misbehaving agent can send thousands of malformed
/// messages a second; each is counted, but only the first few per period are logged, then how many were not.
package final class LogBudget: Sendable {
    private struct State {
        var periodStart: ContinuousClock.Instant
        var logged = 0
        var suppressed = 0
    }

    private let limit: Int
    private let period: Duration
    private let state: Mutex<State>

    public init(limit: Int = 10, per period: Duration = .seconds(10)) {
        self.limit = limit
        self.period = period
        state = Mutex(State(periodStart: .now))
    }

    public enum Decision: Equatable, Sendable {
        /// Log it; `suppressedBefore` warnings of the previous period were not logged.
        case log(suppressedBefore: Int)
        case suppress
    }

    public func admit(at now: ContinuousClock.Instant = .now) -> Decision {
        state.withLock { state in
            var suppressedBefore = 0
            if state.periodStart.duration(to: now) >= period {
                suppressedBefore = state.suppressed
                state = State(periodStart: now)
            }
            guard state.logged < limit else {
                state.suppressed += 1
                return .suppress
            }
            state.logged += 1
            return .log(suppressedBefore: suppressedBefore)
        }
    }
}
