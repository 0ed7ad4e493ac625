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

extension ValueDropReason {
    /// The reason's place in `allCases`, where a source's counts are kept.
    fileprivate var index: Int {
        switch self {
        case .noAssociation: 0
        case .superseded: 1
        case .offlineQueueFull: 2
        case .connectionLost: 3
        case .payloadRejected: 4
        case .stop: 5
        case .zeroLossBufferFull: 6
        case .zeroLossActorSilent: 7
        }
    }
}

extension MetricsSystem {
    /// Whether a metrics backend was bootstrapped (the agent serves its metrics endpoint). Without one nobody reads
    /// a counter, so counters kept per source or per sensor are not made at all: each costs heap, and its increment
    /// per value a cache miss. Asked when the counters would be made, after the agent bootstrapped its backend.
    package static var hasBackend: Bool { !(factory is NOOPMetricsHandler) }
}

/// Counts every value and other publication the agent drops, by reason, in the metrics
/// (`coaty_edge_values_dropped_total{source, reason}`, `coaty_edge_publications_dropped_total{reason}`) and in
/// `counts`, and logs them within a budget.
///
/// With a metrics backend (the endpoint served), every own source's series exist from the start, at 0, so that a
/// scrape shows what may come. Without one nobody reads the series, and a source's counts and counters are made
/// at its first drop: eight counters per source from the start cost about 2.6 KB of heap per source.
final class DroppedPublications: Sendable {
    /// The drops of one source (or of the other publications) for each reason, in `ValueDropReason` order.
    private struct Series {
        var counts = [Int](repeating: 0, count: ValueDropReason.allCases.count)
        /// Made for a reason at its first drop, or all at once when there is a metrics backend.
        var counters = [Counter?](repeating: nil, count: ValueDropReason.allCases.count)
    }

    private struct Tally {
        var values: [String: Series] = [:]
        var events = Series()
    }

    private let logger: Logger
    private let tally = Mutex(Tally())
    private let logBudget = LogBudget()

    init(sourceIds: [String], logger: Logger) {
        self.logger = logger
        guard MetricsSystem.hasBackend else { return }
        tally.withLock { tally in
            for sourceId in sourceIds {
                var series = Series()
                for reason in ValueDropReason.allCases {
                    series.counters[reason.index] = Self.counter(of: sourceId, reason)
                }
                tally.values[sourceId] = series
            }
            for reason in ValueDropReason.allCases {
                tally.events.counters[reason.index] = Self.counter(of: nil, reason)
            }
        }
    }

    private static func counter(of sourceId: String?, _ reason: ValueDropReason) -> Counter {
        if let sourceId {
            Counter(
                label: "coaty_edge_values_dropped_total",
                dimensions: [("source", sourceId), ("reason", reason.rawValue)])
        } else {
            Counter(label: "coaty_edge_publications_dropped_total", dimensions: [("reason", reason.rawValue)])
        }
    }

    /// Values of `sourceId` dropped for `reason`.
    func count(of sourceId: String, _ reason: ValueDropReason) -> Int {
        tally.withLock { $0.values[sourceId]?.counts[reason.index] ?? 0 }
    }

    /// Values of all sources dropped for `reason`.
    func count(_ reason: ValueDropReason) -> Int {
        tally.withLock { $0.values.values.reduce(0) { $0 + $1.counts[reason.index] } }
    }

    /// Publications that are no values dropped for `reason`.
    func eventCount(_ reason: ValueDropReason) -> Int {
        tally.withLock { $0.events.counts[reason.index] }
    }

    /// Counts `amount` values of a source (nil: other publications) dropped for `reason`, without a log line (the
    /// caller logs, or the drop is the source's normal operation, as when it is not associated).
    func record(_ amount: Int = 1, of sourceId: String?, _ reason: ValueDropReason) {
        guard amount > 0 else { return }
        let index = reason.index
        let counter = tally.withLock { tally in
            func add(to series: inout Series) -> Counter {
                series.counts[index] += amount
                if let counter = series.counters[index] { return counter }
                let counter = Self.counter(of: sourceId, reason)
                series.counters[index] = counter
                return counter
            }
            if let sourceId { return add(to: &tally.values[sourceId, default: Series()]) }
            return add(to: &tally.events)
        }
        counter.increment(by: amount)
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
