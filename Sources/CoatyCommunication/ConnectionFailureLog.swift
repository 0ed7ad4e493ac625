import Synchronization

/// What to log about failed connection attempts, so that the reason is always seen and a broker down for hours does
/// not fill the journal: the first failure and each change of reason at once (at most `changeBudget` of them per
/// its period), the same reason again at most once per `repeatPeriod`, with how many attempts failed meanwhile.
package final class ConnectionFailureLog: Sendable {
    private struct State {
        var lastReason: String?
        var lastLogged: ContinuousClock.Instant?
        /// Failed attempts since the last message.
        var unlogged = 0
        /// Failed attempts since the last connect.
        var failures = 0
    }

    private let repeatPeriod: Duration
    private let changeBudget: LogBudget
    private let state = Mutex(State())

    public init(
        repeatPeriod: Duration = .seconds(600), changeBudget: LogBudget = LogBudget(limit: 10, per: .seconds(600))
    ) {
        self.repeatPeriod = repeatPeriod
        self.changeBudget = changeBudget
    }

    /// What to say about one failed attempt, or nil to stay quiet.
    public enum Message: Equatable, Sendable {
        /// The first failure, or a new reason; `unloggedBefore` failed attempts were not logged since the last message.
        case failing(reason: String, unloggedBefore: Int)
        /// The same reason as before; `attempts` failed since the last message (this one included).
        case stillFailing(reason: String, attempts: Int)
    }

    public func failed(_ reason: String, at now: ContinuousClock.Instant = .now) -> Message? {
        state.withLock { state in
            state.failures += 1
            defer { state.lastReason = reason }
            let isNewReason = reason != state.lastReason
            if isNewReason, case .log = changeBudget.admit(at: now) {
                return logged(.failing(reason: reason, unloggedBefore: state.unlogged), at: now, in: &state)
            }
            if let lastLogged = state.lastLogged, lastLogged.duration(to: now) < repeatPeriod {
                state.unlogged += 1
                return nil
            }
            let message =
                isNewReason
                ? Message.failing(reason: reason, unloggedBefore: state.unlogged)
                : .stillFailing(reason: reason, attempts: state.unlogged + 1)
            return logged(message, at: now, in: &state)
        }
    }

    private func logged(_ message: Message, at now: ContinuousClock.Instant, in state: inout State) -> Message {
        state.lastLogged = now
        state.unlogged = 0
        return message
    }

    /// The reason of the last failed attempt since the last connect, nil if none failed.
    public var lastReason: String? { state.withLock { $0.lastReason } }

    /// Forgets the failures (on a connect or a new start); returns how many attempts had failed.
    @discardableResult
    public func reset() -> Int {
        state.withLock { state in
            defer { state = State() }
            return state.failures
        }
    }
}
