import CoreMetrics
import Logging
import Synchronization

/// Why a value of an own IO source did not reach the actors associated with it, as the `reason` of
/// `coaty_edge_values_dropped_total{source, reason}`.
public enum ValueDropReason: String, Sendable, Hashable, CaseIterable {
    /// The source was not associated with any actor when it produced the value.
    case noAssociation = "no association"
    /// The source's strategy (Sample, Throttle) sent a newer value in its place.
    case superseded
    /// The agent was offline and its offline queue was full (see `OfflineQueueLimits`).
    case offlineQueueFull = "offline queue full"
    /// The connection ended while the value waited in libmosquitto's queue, not yet written to the socket.
    case connectionLost = "connection lost"
    /// The broker connection refused the publication (a payload over MQTT's limit).
    case payloadRejected = "payload rejected"
    /// The agent stopped before the value could be sent.
    case stop
    /// The zero-loss buffer of the source was full: actor agents had not acknowledged that many values (see
    /// `ZeroLossOptions`). The value's plain Coaty copy is counted apart, by the other reasons.
    case zeroLossBufferFull = "zero-loss buffer full"
    /// Kept for zero-loss delivery only for actor agents that did not answer for 10 minutes and were forgotten.
    case zeroLossActorSilent = "zero-loss actor silent"
}

/// Counts every value and other publication the agent drops, by reason, in the metrics
/// (`coaty_edge_values_dropped_total{source, reason}`, `coaty_edge_publications_dropped_total{reason}`) and in
/// `counts`, and logs them within a budget.
final class DroppedPublications: Sendable {
    private struct Key: Hashable {
        var sourceId: String?
        var reason: ValueDropReason
    }

    private struct Tally {
        var counters: [Key: Counter] = [:]
        var counts: [Key: Int] = [:]
    }

    private let logger: Logger
    private let tally = Mutex(Tally())
    private let logBudget = LogBudget()

    /// Every own source's series exists from the start, at 0, so that a scrape shows what may come.
    init(sourceIds: [String], logger: Logger) {
        self.logger = logger
        for sourceId in sourceIds {
            for reason in ValueDropReason.allCases { record(0, of: sourceId, reason) }
        }
        for reason in ValueDropReason.allCases { record(0, of: nil, reason) }
    }

    /// Values of `sourceId` dropped for `reason`.
    func count(of sourceId: String, _ reason: ValueDropReason) -> Int {
        tally.withLock { $0.counts[Key(sourceId: sourceId, reason: reason)] ?? 0 }
    }

    /// Values of all sources dropped for `reason`.
    func count(_ reason: ValueDropReason) -> Int {
        tally.withLock { $0.counts.filter { $0.key.sourceId != nil && $0.key.reason == reason }.values.reduce(0, +) }
    }

    /// Publications that are no values dropped for `reason`.
    func eventCount(_ reason: ValueDropReason) -> Int {
        tally.withLock { $0.counts[Key(sourceId: nil, reason: reason)] ?? 0 }
    }

    /// Counts `amount` values of a source (nil: other publications) dropped for `reason`, without a log line (the
    /// caller logs, or the drop is the source's normal operation, as when it is not associated).
    func record(_ amount: Int = 1, of sourceId: String?, _ reason: ValueDropReason) {
        guard amount >= 0 else { return }
        let key = Key(sourceId: sourceId, reason: reason)
        let counter = tally.withLock { tally in
            tally.counts[key, default: 0] += amount
            if let counter = tally.counters[key] { return counter }
            let counter =
                if let sourceId {
                    Counter(
                        label: "coaty_edge_values_dropped_total",
                        dimensions: [("source", sourceId), ("reason", reason.rawValue)])
                } else {
                    Counter(label: "coaty_edge_publications_dropped_total", dimensions: [("reason", reason.rawValue)])
                }
            tally.counters[key] = counter
            return counter
        }
        if amount > 0 { counter.increment(by: amount) }
    }

    /// Counts values of a source dropped for `reason` and logs them within the budget, as a warning.
    func drop(
        _ amount: Int, of sourceId: String, _ reason: ValueDropReason, because explanation: @autoclosure () -> String
    ) {
        guard amount > 0 else { return }
        record(amount, of: sourceId, reason)
        guard case .log(let suppressed) = logBudget.admit() else { return }
        if suppressed > 0 {
            logger.warning("\(suppressed) more drops of publications were not logged")
        }
        logger.warning("dropped \(amount) value\(amount == 1 ? "" : "s") of source \(sourceId): \(explanation())")
    }

    /// Counts publications that gave way or could not be sent, and logs them within the budget: at notice level for
    /// a stop, which the operator asked for, and as a warning otherwise.
    func drop(_ dropped: [QueuedPublication], _ reason: ValueDropReason, because explanation: @autoclosure () -> String)
    {
        // Join events are never dropped by a bound; at a stop the last will says what an unsent Deadvertise would.
        let publications = dropped.filter { $0.kind != .join }
        guard !publications.isEmpty else { return }
        var values: [String: Int] = [:]
        var events = 0
        for publication in publications {
            switch publication.kind {
            case .value(let sourceId): values[sourceId, default: 0] += 1
            case .event: events += 1
            case .join: continue
            }
        }
        for (sourceId, amount) in values { record(amount, of: sourceId, reason) }
        record(events, of: nil, reason)
        guard case .log(let suppressed) = logBudget.admit() else { return }
        if suppressed > 0 {
            logger.warning("\(suppressed) more drops of publications were not logged")
        }
        let what =
            publications.count == 1
            ? "a publication on \(publications[0].message.topic)" : "\(publications.count) publications"
        logger.log(level: reason == .stop ? .notice : .warning, "dropped \(what): \(explanation())")
    }
}
