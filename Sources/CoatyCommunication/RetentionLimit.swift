import CoreMetrics
import Logging
import Synchronization

/// A bound on what an agent keeps about other agents (their identities, IO nodes, objects): how many entries, and
/// how many bytes they take as JSON text. Each entry came in one message of at most `maximumInboundPayload` bytes,
/// but without a bound any agent on the broker could make every other one keep its advertisements until it
/// deadvertises them.
public struct RetentionLimit: Sendable, Hashable {
    public var maximumCount: Int
    public var maximumBytes: Int

    public init(maximumCount: Int, maximumBytes: Int) {
        self.maximumCount = maximumCount
        self.maximumBytes = maximumBytes
    }

    /// Whether a store holding `count` entries of `bytes` in all may grow by `growth` bytes: by a new entry
    /// (`isNew`), or by replacing one with a larger one.
    public func admits(count: Int, bytes: Int, isNew: Bool, growth: Int) -> Bool {
        (!isNew || count < maximumCount) && bytes + growth <= maximumBytes
    }
}

/// Counts (`coaty_edge_retention_refused_total{store}`) and logs, within a budget, the entries a store of other
/// agents' objects refused because it was full.
package final class RetentionRefusals: Sendable {
    private let store: String
    private let logger: Logger
    private let counter: Counter
    private let budget = LogBudget()
    private let refusals = Atomic(0)

    public init(store: String, logger: Logger) {
        self.store = store
        self.logger = logger
        counter = Counter(label: "coaty_edge_retention_refused_total", dimensions: [("store", store)])
    }

    /// How many entries were refused so far.
    public var count: Int { refusals.load(ordering: .relaxed) }

    public func refuse(_ what: () -> String) {
        refusals.add(1)
        counter.increment()
        guard case .log(let suppressed) = budget.admit() else { return }
        if suppressed > 0 {
            logger.warning("\(suppressed) more entries were refused by the \(store) without a log line")
        }
        logger.warning("\(store) is full: refused \(what())")
    }
}
