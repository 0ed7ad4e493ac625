import CoatyCommunication
import CoatyModel
import CoatyMQTT
import CoatyRuntime
import CoatyTestSupport
import EdgeEmulation
import Foundation
import MQTTTestSupport
import Testing

@testable import CoatyEdgeAgent

/// An output goes to its safe state when its actor has lost every source, not when Coaty reports the actor
/// unassociated after one of several sources left (Coaty's IoState says "not associated" after any disassociation).
@Suite(.serialized, .emulatedHardware) struct OutputSafeStateTests {
    @Test func safeStateOnlyWhenTheLastSourceLeaves() async throws {
        let broker = try await TestBroker.started()
        let hardware = try EmulatedHardware()
        let gpio = try hardware.addGPIOChip(91, lines: 8)
        let sysfs = FileManager.default.temporaryDirectory.appendingPathComponent("coaty-safe-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: sysfs) }
        for zone in 0..<2 {
            let directory = sysfs.appendingPathComponent("class/thermal/thermal_zone\(zone)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data("65000\n".utf8).write(to: directory.appendingPathComponent("temp"))
        }
        let configuration = #"""
            {
              "common": {"agentIdentity": {"name": "fan"}, "ioContextNodes": {"ctx": {
                "ioSources": [{"objectId": "zone0", "name": "zone 0", "valueType": "t"}, {"objectId": "zone1", "name": "zone 1", "valueType": "t"}],
                "ioActors": [{"objectId": "fan", "name": "fan", "valueType": "t"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"},
              "devices": {
                "sysfsRoot": "\#(sysfs.path)",
                "sensors": [
                  {"driver": "thermal", "zone": 0, "pollInterval": "100ms", "sources": {"temperature": {"ioSource": "zone0"}}},
                  {"driver": "thermal", "zone": 1, "pollInterval": "100ms", "sources": {"temperature": {"ioSource": "zone1"}}}],
                "outputs": [{"driver": "gpio-output", "ioActor": "fan", "chip": "gpiochip91", "line": 3, "initial": "off",
                             "safeState": "off", "hysteresis": {"onAbove": 60, "offBelow": 55}}]
              }
            }
            """#
        let agent = try await EdgeAgent.make(
            AgentConfiguration(base: try Configuration.parse(Array(configuration.utf8), source: "fan.json")))
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let router = scenarios.agent("router")
        try await scenarios.online(router)
        agent.start()
        try await poll { (try? gpio.state(line: 3).isRequested) == true }
        try await brokerSync(agent.communicationManager)

        func associate(_ source: String, _ route: String?) async throws {
            try await router.publishAssociate(
                AssociateEvent(
                    ioContextName: "ctx", ioSourceId: source, ioActorId: "fan", associatingRoute: route, updateRate: nil
                ))
        }
        try await associate("zone0", "coaty/3/-/IOV/zone0")
        try await associate("zone1", "coaty/3/-/IOV/zone1")
        try await poll(within: .seconds(20)) { (try? gpio.state(line: 3).level) == true }

        // One of two sources leaves: Coaty's IoState says "not associated", but zone 1 still feeds the fan.
        try await associate("zone0", nil)
        try await poll { !agent.communicationManager.ioState(of: "zone0").hasAssociations }
        try await Task.sleep(for: .milliseconds(500))
        #expect(try gpio.state(line: 3).level)

        // The last source leaves: now the fan goes to its safe state, off.
        try await associate("zone1", nil)
        try await poll(within: .seconds(20)) { (try? gpio.state(line: 3).level) == false }

        await agent.shutdown()
        await scenarios.stop(router)
        try await broker.stop()
    }
}
