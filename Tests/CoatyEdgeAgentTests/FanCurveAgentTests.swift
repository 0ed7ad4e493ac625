import CoatyCommunication
import CoatyModel
import CoatyMQTT
import CoatyRuntime
import CoatySharedObjects
import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

@testable import CoatyEdgeAgent

/// A PWM fan driven by a fan curve from the SoC temperature, all through sysfs: the agent writes the channel's files
/// of a tree the test made, takes new curve points from a shared object at once, and leaves the fan at its safe duty.
@Suite(.serialized) struct FanCurveAgentTests {
    @Test func theFanFollowsTheTemperatureThroughItsCurveAndSharedPoints() async throws {
        let broker = try await TestBroker.started()
        let sysfs = FileManager.default.temporaryDirectory.appendingPathComponent("coaty-pwm-fan-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: sysfs) }
        let zone = sysfs.appendingPathComponent("class/thermal/thermal_zone0")
        let chip = sysfs.appendingPathComponent("class/pwm/pwmchip0")
        let channel = chip.appendingPathComponent("pwm0")
        for directory in [zone, channel] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        try Data("65000\n".utf8).write(to: zone.appendingPathComponent("temp"))
        try Data("1\n".utf8).write(to: chip.appendingPathComponent("npwm"))
        for (file, text) in [("period", "0"), ("duty_cycle", "0"), ("polarity", "normal"), ("enable", "0")] {
            try Data("\(text)\n".utf8).write(to: channel.appendingPathComponent(file))
        }
        func file(_ name: String) -> String? {
            (try? String(contentsOf: channel.appendingPathComponent(name), encoding: .utf8))?.trimmingCharacters(
                in: .whitespacesAndNewlines)
        }
        let configuration = #"""
            {
              "common": {"agentIdentity": {"name": "fan"}, "ioContextNodes": {"ctx": {
                "ioSources": [{"objectId": "soc", "name": "SoC", "valueType": "coaty-edge.Temperature[Celsius]"}],
                "ioActors": [{"objectId": "fan", "name": "Case fan", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"},
              "sharedObjects": {"fan": {"data": {}}},
              "devices": {
                "sysfsRoot": "\#(sysfs.path)",
                "sensors": [{"driver": "thermal", "zone": 0, "pollInterval": "100ms", "sources": {"temperature": {"ioSource": "soc"}}}],
                "outputs": [{"driver": "pwm-output", "ioActor": "fan", "chip": "pwmchip0", "channel": 0, "frequency": 25000,
                             "safeDuty": 80, "curve": {"points": {"shared": "fan.curve", "default": [[40, 0], [60, 50], [80, 100]]},
                                                       "hysteresis": 2}}]
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
        // Started: 25 kHz, stopped (duty 0), running.
        try await poll(within: .seconds(30), "the channel enabled, duty \(file("duty_cycle") ?? "-")") {
            file("enable") == "1"
        }
        #expect(file("period") == "40000")
        #expect(file("duty_cycle") == "0")
        try await brokerSync(agent.communicationManager)
        try await router.publishAssociate(
            AssociateEvent(
                ioContextName: "ctx", ioSourceId: "soc", ioActorId: "fan", associatingRoute: "coaty/3/-/IOV/soc",
                updateRate: nil))
        try await poll { agent.communicationManager.ioState(of: "fan").hasAssociations }

        // 65 °C on the default curve: 62.5 %, 25000 of 40000 ns.
        try await poll(within: .seconds(30), "duty_cycle \(file("duty_cycle") ?? "-"), not 25000") {
            file("duty_cycle") == "25000"
        }
        // Cooler by less than the band: the duty holds; by more, it follows, 2 °C behind.
        try Data("63500\n".utf8).write(to: zone.appendingPathComponent("temp"), options: .atomic)
        try await Task.sleep(for: .milliseconds(500))
        #expect(file("duty_cycle") == "25000")
        try Data("58000\n".utf8).write(to: zone.appendingPathComponent("temp"), options: .atomic)
        try await poll(within: .seconds(30), "duty_cycle \(file("duty_cycle") ?? "-"), not 20000") {
            file("duty_cycle") == "20000"
        }  // read at 60 °C: 50 %

        // New points in the shared object apply at once.
        let fan = try await operatorShared.connect("fan", ifMissing: .fail)
        try await fan.set("curve", to: [[40, 0], [60, 100]])
        try await poll(within: .seconds(30), "duty_cycle \(file("duty_cycle") ?? "-"), not 40000") {
            file("duty_cycle") == "40000"
        }
        // Points that are no curve are not taken.
        try await fan.set("curve", to: [[60, 0], [40, 100]])
        try await Task.sleep(for: .milliseconds(500))
        #expect(file("duty_cycle") == "40000")

        // The stop leaves the fan at its safe duty, 80 %.
        try Data("41000\n".utf8).write(to: zone.appendingPathComponent("temp"), options: .atomic)
        try await poll(within: .seconds(30), "duty_cycle \(file("duty_cycle") ?? "-"), not 6000") {
            file("duty_cycle") == "6000"
        }  // read at 43 °C: 15 %
        serving.cancel()
        await agent.shutdown()
        #expect(file("duty_cycle") == "32000")
        #expect(file("enable") == "1")
        await scenarios.stop(router)
        try await broker.stop()
    }
}
