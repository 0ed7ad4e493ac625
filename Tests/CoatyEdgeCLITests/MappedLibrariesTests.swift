import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// Libraries an agent loads only when it needs them: Avahi's client (and D-Bus, libsystemd, libgcrypt and the
/// compressors it pulls in) only for a broker found by mDNS, which Tests/Discovery/run checks against avahi-daemon.
@Suite struct MappedLibrariesTests {
    @Test func anAgentWithABrokerURLDoesNotMapAvahi() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let configuration = """
            {"common": {"agentIdentity": {"name": "plain"}},
             "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker.port)"}}
            """
        let agent = try await Executable.start([
            "run", "--config", try scratch.write(configuration, to: "agent.json").path,
        ])
        try await agent.line(containing: "online as", onErrors: true, within: .seconds(60))
        let maps = try procFile("/proc/\(agent.processIdentifier)/maps")
        #expect(maps.contains("libmosquitto"), "the maps are the agent's: it has its MQTT library")
        #expect(!maps.contains("libavahi"), "\(maps)")
        #expect(!maps.contains("libdbus"), "\(maps)")
        try await agent.stop()
        try await broker.stop()
    }
}
