import CoatyIORouting
import CoatyRuntime
import CoatyTestSupport
import EdgeEmulation
import Foundation
import MQTTTestSupport
import Testing

@testable import CoatyEdgeAgent

/// The Raspberry Pi example's routing on emulated hardware, with a real broker: the real thermal zone reader,
/// the router's JSON rules, the fan's hysteresis and the GPIO lines through libgpiod, end to end.
@Suite(.serialized, .emulatedHardware) struct GreenhouseEndToEndTests {
    static let rules = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("rules/greenhouse").path

    @Test func socTemperatureSwitchesTheFanAndTheDoorTheAlarm() async throws {
        let broker = try await TestBroker.started()
        let hardware = try EmulatedHardware()
        let gpio = try hardware.addGPIOChip(90, lines: 32)
        let sysfs = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coaty-greenhouse-\(UUID().uuidString)")
        let zone = sysfs.appendingPathComponent("class/thermal/thermal_zone0")
        try FileManager.default.createDirectory(at: zone, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: sysfs) }
        func setSoC(_ celsius: Double) throws {
            try Data("\(Int(celsius * 1000))\n".utf8).write(to: zone.appendingPathComponent("temp"), options: .atomic)
        }
        try Data("cpu-thermal\n".utf8).write(to: zone.appendingPathComponent("type"))
        try setSoC(50)

        let configuration = #"""
            {
              "common": {
                "agentIdentity": {"name": "greenhouse-pi"},
                "ioContextNodes": {"Greenhouse": {
                  "ioSources": [
                    {"objectId": "soc", "name": "SoC temperature", "valueType": "coaty-edge.Temperature[Celsius]"},
                    {"objectId": "door", "name": "Door contact", "valueType": "coaty-edge.Switch"}],
                  "ioActors": [
                    {"objectId": "fan", "name": "Enclosure fan relay", "valueType": "coaty-edge.Temperature[Celsius]"},
                    {"objectId": "led", "name": "Alarm LED", "valueType": "coaty-edge.Switch"}]}}
              },
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"},
              "controllers": {"router": {"type": "ioRouter", "ioContext": {"name": "Greenhouse"}, "rules": "\#(Self.rules)"}},
              "devices": {
                "sysfsRoot": "\#(sysfs.path)",
                "sensors": [{"driver": "thermal", "zone": 0, "pollInterval": "100ms", "sources": {"temperature": {"ioSource": "soc"}}}],
                "outputs": [
                  {"driver": "gpio-output", "ioActor": "fan", "chip": "gpiochip90", "line": 17, "activeLow": true,
                   "initial": "off", "safeState": "on", "hysteresis": {"onAbove": 60, "offBelow": 55}},
                  {"driver": "gpio-output", "ioActor": "led", "chip": "gpiochip90", "line": 27, "initial": "off", "safeState": "off"}],
                "inputs": [{"driver": "gpio-input", "ioSource": "door", "chip": "gpiochip90", "line": 22}]
              }
            }
            """#
        let agent = try await EdgeAgent.make(
            AgentConfiguration(base: try Configuration.parse(Array(configuration.utf8), source: "greenhouse.json")))
        agent.start()

        // Active-low: the fan is on while its line is low.
        func fanIsOn() throws -> Bool { try !gpio.state(line: 17).level }
        func ledIsOn() throws -> Bool { try gpio.state(line: 27).level }
        try await poll {
            (try? gpio.state(line: 17).isRequested) == true && (try? gpio.state(line: 27).isRequested) == true
        }
        #expect(try gpio.state(line: 17).isActiveLow)
        #expect(try !fanIsOn())

        try await poll { agent.communicationManager.ioState(of: "soc").hasAssociations }
        try setSoC(65)
        try await poll(within: .seconds(20)) { (try? fanIsOn()) == true }
        try setSoC(58)  // inside the hysteresis band: stays on
        try await Task.sleep(for: .milliseconds(400))
        #expect(try fanIsOn())
        try setSoC(50)
        try await poll(within: .seconds(20)) { (try? fanIsOn()) == false }

        try await poll { agent.communicationManager.ioState(of: "door").hasAssociations }
        try gpio.drive(line: 22, true)
        try await poll(within: .seconds(20)) { (try? ledIsOn()) == true }
        try gpio.drive(line: 22, false)
        try await poll(within: .seconds(20)) { (try? ledIsOn()) == false }
        try gpio.drive(line: 22, true)
        try await poll(within: .seconds(20)) { (try? ledIsOn()) == true }

        // Shutting down puts both outputs in their safe states: the fan on, the alarm LED off.
        await agent.shutdown()
        #expect(try fanIsOn())
        #expect(try !ledIsOn())
        try await broker.stop()
    }
}
