import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// The metrics endpoint of a running agent while the agent has no descriptor to spare: it logs a warning, keeps the
/// agent running, and answers the waiting scrape once descriptors are there again.
@Suite struct MetricsShortageTests {
    @Test func anAgentOutOfDescriptorsKeepsRunningAndServesTheScrapeWhenTheyAreBack() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let metricsPort = try freeLoopbackPort()
        let agent = try await Executable.start([
            "run", "--config", try scratch.write(Agents.sharedHost(broker: broker.port), to: "host.json").path,
            "--metrics-port", "\(metricsPort)",
        ])
        try await waitUntil("the metrics endpoint to answer", within: .seconds(30)) {
            (try? await scrape(port: metricsPort)) != nil
        }

        // A soft limit of 3: the agent has its standard descriptors open and no other new one, so the metrics
        // endpoint's accept fails with EMFILE (at once, or after the one connection its waiting accept had a
        // descriptor for already). prlimit(1) of util-linux, as Glibc's module does not declare the GNU call.
        let pid = agent.processIdentifier
        let open = Set(try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").compactMap { Int($0) })
        try #require(open.isSuperset(of: [0, 1, 2]))
        let limits = try procFile("/proc/\(pid)/limits")
        let openFiles = try #require(limits.split(separator: "\n").first { $0.hasPrefix("Max open files") })
        let fields = openFiles.split(separator: " ")  // Max open files SOFT HARD files
        try #require(fields.count == 6)
        let (soft, hard) = (fields[3], fields[4])
        let lowered = try await Command(["prlimit", "--pid", "\(pid)", "--nofile=3:\(hard)"]).run()
        #expect(lowered.succeeded, "\(lowered.errors)")

        let scrapeWhileShort = Task { try await scrape(port: metricsPort) }
        try await agent.line(containing: "cannot accept a connection: Too many open files", onErrors: true)
        let restored = try await Command(["prlimit", "--pid", "\(pid)", "--nofile=\(soft):\(hard)"]).run()
        #expect(restored.succeeded, "\(restored.errors)")
        #expect(!(try await scrapeWhileShort.value).isEmpty)
        #expect(!(try await scrape(port: metricsPort)).isEmpty)
        try await agent.line(containing: "the metrics endpoint accepts connections again", onErrors: true)

        let stopped = try await agent.stop(with: SIGTERM)
        #expect(stopped.status == 0, "\(stopped.errors)")
        #expect(!stopped.errors.contains("error"), "\(stopped.errors)")
        try await broker.stop()
    }
}
