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

/// A pulse counter whose total survives a restart of the agent, and a door opener's timed output, on emulated GPIO
/// chips found by their label.
@Suite(.serialized, .emulatedHardware) struct CounterAndPulseAgentTests {
    private func agent(_ text: String) async throws -> Container {
        try await EdgeAgent.make(
            AgentConfiguration(base: try Configuration.parse(Array(text.utf8), source: "agent.json")))
    }

    @Test func theCountedTotalGoesOnAfterARestart() async throws {
        let broker = try await TestBroker.started()
        let gpio = try EmulatedHardware().addGPIOChip(150, lines: 8, label: "meter-chip-150")
        try gpio.name(line: 3, "METER")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coaty-counter-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let stateFile = directory.appendingPathComponent("water.count").path
        let configuration = #"""
            {
              "common": {"agentIdentity": {"name": "meter"}, "ioContextNodes": {"ctx": {
                "ioSources": [{"objectId": "total", "name": "Water pulses", "valueType": "coaty-edge.Count"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"},
              "devices": {"inputs": [{"driver": "pulse-counter", "chip": "meter-chip-150", "line": "METER", "publishInterval": "100ms",
                                      "total": {"ioSource": "total"}, "stateFile": "\#(stateFile)"}]}
            }
            """#
        func stored() -> String? { try? String(contentsOfFile: stateFile, encoding: .utf8) }
        func pulses(_ count: Int) throws {
            for _ in 0..<count {
                try gpio.drive(line: 3, true)
                try gpio.drive(line: 3, false)
            }
        }

        let first = try await agent(configuration)
        first.start()
        try await poll { (try? gpio.state(line: 3).isRequested) == true }
        try pulses(10)
        try await poll("the total stored, not \(stored() ?? "no file")") { stored() == "{\"total\": 10}\n" }
        await first.shutdown()
        try await poll { (try? gpio.state(line: 3).isRequested) == false }

        // Pulses while no agent runs are not seen (the line is not requested); the total goes on from 10.
        let second = try await agent(configuration)
        second.start()
        try await poll { (try? gpio.state(line: 3).isRequested) == true }
        try pulses(5)
        try await poll("the total stored, not \(stored() ?? "no file")") { stored() == "{\"total\": 15}\n" }
        await second.shutdown()

        // A state file that holds no total stops the counter instead of starting it from zero.
        try Data("garbage".utf8).write(to: URL(fileURLWithPath: stateFile))
        let third = try await agent(configuration)
        third.start()
        try await Task.sleep(for: .milliseconds(500))
        #expect(try gpio.state(line: 3).isRequested == false)
        #expect(stored() == "garbage")
        await third.shutdown()
        try await broker.stop()
    }

    @Test func aDoorOpenerPulsesForItsTimeWhenTheButtonIsPressed() async throws {
        let broker = try await TestBroker.started()
        let gpio = try EmulatedHardware().addGPIOChip(151, lines: 8, label: "door-chip-151")
        let configuration = #"""
            {
              "common": {"agentIdentity": {"name": "door"}, "ioContextNodes": {"ctx": {
                "ioSources": [{"objectId": "button", "name": "Button", "valueType": "coaty-edge.Switch"}],
                "ioActors": [{"objectId": "opener", "name": "Door opener", "valueType": "coaty-edge.Switch"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"},
              "devices": {
                "inputs": [{"driver": "gpio-input", "ioSource": "button", "chip": "door-chip-151", "line": 1}],
                "outputs": [{"driver": "gpio-output", "ioActor": "opener", "chip": "door-chip-151", "line": 2, "pulse": "1s"}]
              }
            }
            """#
        let agent = try await agent(configuration)
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let router = scenarios.agent("router")
        try await scenarios.online(router)
        agent.start()
        try await poll {
            (try? gpio.state(line: 2).isRequested) == true && (try? gpio.state(line: 1).isRequested) == true
        }
        try await brokerSync(agent.communicationManager)
        try await router.publishAssociate(
            AssociateEvent(
                ioContextName: "ctx", ioSourceId: "button", ioActorId: "opener",
                associatingRoute: "coaty/3/-/IOV/button", updateRate: nil))
        try await poll { agent.communicationManager.ioState(of: "opener").hasAssociations }
        try await brokerSync(agent.communicationManager)

        try gpio.drive(line: 1, true)
        try await poll { (try? gpio.state(line: 2).level) == true }
        // The button's release publishes false, an "off" command: the pulse ends at once.
        try gpio.drive(line: 1, false)
        try await poll { (try? gpio.state(line: 2).level) == false }
        // Pressed again, and held: the opener pulses for its second, then goes off by itself.
        try gpio.drive(line: 1, true)
        try await poll { (try? gpio.state(line: 2).level) == true }
        let pressed = ContinuousClock.now
        try await poll { (try? gpio.state(line: 2).level) == false }
        let length = pressed.duration(to: .now)
        #expect(length >= .milliseconds(900), "on for \(length)")
        #expect(length < .seconds(10))
        await agent.shutdown()
        #expect(try gpio.state(line: 2).level == false)
        await scenarios.stop(router)
        try await broker.stop()
    }
}
