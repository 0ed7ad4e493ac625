import CoatyCommunication
import CoatyModel
import CoatyMQTT
import CoatyRuntime
import CoatySharedObjects
import CoatyTestSupport
import EdgeEmulation
import Foundation
import MQTTTestSupport
import Testing

@testable import CoatyEdgeAgent

/// A fan relay whose hysteresis thresholds are values of a shared object: changing the setpoint switches the
/// emulated GPIO line at once, without a restart and without waiting for the next temperature.
@Suite(.serialized, .emulatedHardware) struct SharedThresholdTests {
    @Test func changingASharedSetpointSwitchesTheOutputAtOnce() async throws {
        let broker = try await TestBroker.started()
        let hardware = try EmulatedHardware()
        let gpio = try hardware.addGPIOChip(93, lines: 8)
        let sysfs = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coaty-shared-fan-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: sysfs) }
        let zone = sysfs.appendingPathComponent("class/thermal/thermal_zone0")
        try FileManager.default.createDirectory(at: zone, withIntermediateDirectories: true)
        try Data("65000\n".utf8).write(to: zone.appendingPathComponent("temp"))
        let configuration = #"""
            {
              "common": {"agentIdentity": {"name": "fan"}, "ioContextNodes": {"ctx": {
                "ioSources": [{"objectId": "soc", "name": "SoC", "valueType": "t"}],
                "ioActors": [{"objectId": "fan", "name": "fan", "valueType": "t"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"},
              "sharedObjects": {"setpoints": {"data": {"fanOn": 62, "fanOff": 58}}},
              "devices": {
                "sysfsRoot": "\#(sysfs.path)",
                "sensors": [{"driver": "thermal", "zone": 0, "pollInterval": "100ms", "sources": {"temperature": {"ioSource": "soc"}}}],
                "outputs": [{"driver": "gpio-output", "ioActor": "fan", "chip": "gpiochip93", "line": 2, "initial": "off",
                             "hysteresis": {"onAbove": {"shared": "setpoints.fanOn", "default": 60},
                                            "offBelow": {"shared": "setpoints.fanOff", "default": 55}}}]
              }
            }
            """#
        let agent = try await EdgeAgent.make(
            AgentConfiguration(base: try Configuration.parse(Array(configuration.utf8), source: "fan.json")))
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let router = scenarios.agent("router")
        let operatorShared = SharedObjects(manager: router)
        let serving = Task { await operatorShared.run() }
        try await scenarios.online(router)
        agent.start()
        try await poll { (try? gpio.state(line: 2).isRequested) == true }
        try await brokerSync(agent.communicationManager)
        try await router.publishAssociate(
            AssociateEvent(
                ioContextName: "ctx", ioSourceId: "soc", ioActorId: "fan", associatingRoute: "coaty/3/-/IOV/soc",
                updateRate: nil))
        try await poll { agent.communicationManager.ioState(of: "fan").hasAssociations }

        // 65 °C is above fanOn: the fan runs.
        try await poll { (try? gpio.state(line: 2).level) == true }

        let setpoints = try await operatorShared.connect("setpoints", ifMissing: .fail)
        // Inside the new band the fan keeps running; once off lies above 65 °C it stops.
        try await setpoints.set("fanOn", to: 75)
        try await setpoints.set("fanOff", to: 70)
        try await poll { (try? gpio.state(line: 2).level) == false }
        try await setpoints.set("fanOff", to: 63)
        try await setpoints.set("fanOn", to: 64)
        try await poll { (try? gpio.state(line: 2).level) == true }

        // Thresholds without a band are not taken: the fan keeps running on 64/63.
        try await setpoints.set("fanOff", to: 66)
        try await Task.sleep(for: .milliseconds(500))
        #expect(try gpio.state(line: 2).level == true)

        serving.cancel()
        await agent.shutdown()
        await scenarios.stop(router)
        try await broker.stop()
    }
}
