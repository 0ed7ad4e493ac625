import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// What an operator reads on the metrics endpoint about values that did not reach an actor.
@Suite(.serialized) struct DroppedValueMetricsTests {
    /// A sensor agent without a router: every value it reads is dropped for want of an association, and counted so;
    /// the other reasons are there at 0 from the start.
    @Test(.emulatedHardware) func valuesOfASourceThatIsNotAssociatedAreCountedAsNoAssociation() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let metricsPort = try freeLoopbackPort()
        let config = try scratch.write(Agents.sensors(broker: broker.port), to: "sensors.json").path
        let sensors = try await Executable.start(["run", "--config", config, "--metrics-port", "\(metricsPort)"])

        func dropped(_ reason: String) -> String {
            "coaty_edge_values_dropped_total{source=\"\(Agents.sourceId)\",reason=\"\(reason)\"}"
        }
        let read = "coaty_edge_values_read_total{source=\"\(Agents.sourceId)\"}"
        try await waitUntil("values read and dropped for want of an association", within: .seconds(30)) {
            // Until the agent serves its metrics, the connection is refused.
            guard let metrics = try? await scrape(port: metricsPort) else { return false }
            return (metrics[read] ?? 0) >= 3 && (metrics[dropped("no association")] ?? 0) >= 3
        }
        let metrics = try await scrape(port: metricsPort)
        for reason in ["superseded", "offline queue full", "connection lost", "payload rejected", "stop"] {
            #expect(metrics[dropped(reason)] == 0, "\(reason) in \(metrics)")
        }
        #expect(metrics["coaty_edge_values_routed_total{source=\"\(Agents.sourceId)\"}"] == 0, "\(metrics)")
        #expect(metrics["coaty_edge_publications_dropped_total{reason=\"offline queue full\"}"] == 0, "\(metrics)")

        #expect(try await sensors.stop(with: SIGTERM).status == 0)
        try await broker.stop()
    }
}
