import CoreMetrics
import Logging
import Prometheus
import Testing

@testable import CoatyCommunication

/// The dropped-value series as a Prometheus scrape shows them: all at 0 from the start when the agent serves its
/// metrics, made at a source's first drop when it does not (each series costs heap, per source and reason).
@Suite struct DroppedValueSeriesTests {
    let logger = Logger(label: "test.drops")

    /// The scrape's samples by name and labels, as `name{label="value",...}`.
    func samples(_ registry: PrometheusCollectorRegistry) -> [String: Int] {
        var samples: [String: Int] = [:]
        for line in registry.emitToString().split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Int(line[line.index(after: space)...]) else {
                continue
            }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    func dropped(_ source: String, _ reason: ValueDropReason) -> String {
        "coaty_edge_values_dropped_total{source=\"\(source)\",reason=\"\(reason.rawValue)\"}"
    }

    @Test func withAMetricsBackendEverySeriesIsThereAtZeroFromTheStart() {
        let registry = PrometheusCollectorRegistry()
        let drops = withMetricsFactory(PrometheusMetricsFactory(registry: registry)) {
            DroppedPublications(sourceIds: ["a", "b"], logger: logger)
        }
        let before = samples(registry)
        for source in ["a", "b"] {
            for reason in ValueDropReason.allCases { #expect(before[dropped(source, reason)] == 0, "\(before)") }
        }
        for reason in ValueDropReason.allCases {
            #expect(before["coaty_edge_publications_dropped_total{reason=\"\(reason.rawValue)\"}"] == 0, "\(before)")
        }

        drops.record(2, of: "a", .noAssociation)
        drops.record(of: "b", .superseded)
        drops.record(3, of: nil, .offlineQueueFull)
        let after = samples(registry)
        #expect(after[dropped("a", .noAssociation)] == 2)
        #expect(after[dropped("a", .superseded)] == 0)
        #expect(after[dropped("b", .superseded)] == 1)
        #expect(after["coaty_edge_publications_dropped_total{reason=\"offline queue full\"}"] == 3)
        #expect(drops.count(of: "a", .noAssociation) == 2)
        #expect(drops.count(.superseded) == 1)
        #expect(drops.eventCount(.offlineQueueFull) == 3)
    }

    /// Without a backend (the agent serves no metrics) nothing is made up front; a drop makes its series, with the
    /// same name and labels, in whatever backend is there by then, and the counts are kept all the same.
    @Test func withoutAMetricsBackendASeriesIsMadeAtItsFirstDropWithItsLabels() {
        let drops = DroppedPublications(sourceIds: ["a", "b"], logger: logger)
        #expect(drops.count(of: "a", .noAssociation) == 0)
        drops.record(of: "a", .noAssociation)
        drops.record(0, of: "b", .stop)
        #expect(drops.count(of: "a", .noAssociation) == 1)

        let registry = PrometheusCollectorRegistry()
        withMetricsFactory(PrometheusMetricsFactory(registry: registry)) {
            drops.record(4, of: "b", .stop)
            drops.record(of: nil, .connectionLost)
        }
        let scraped = samples(registry)
        #expect(scraped[dropped("b", .stop)] == 4, "\(scraped)")
        #expect(scraped["coaty_edge_publications_dropped_total{reason=\"connection lost\"}"] == 1, "\(scraped)")
        // Only what was dropped has a series: a source's other reasons, and other sources, cost nothing.
        #expect(scraped.count == 2, "\(scraped)")
        #expect(drops.count(of: "a", .noAssociation) == 1)
        #expect(drops.count(of: "b", .stop) == 4)
        #expect(drops.count(.stop) == 4)
        #expect(drops.eventCount(.connectionLost) == 1)
        #expect(drops.count(of: "b", .noAssociation) == 0)
    }
}
