import CoatyCommunication
import CoatyIORouting
import CoatyModel
import CoatyMQTT
import CoatyRuntime
import CoatyTestSupport
import EdgeEmulation
import Foundation
import MQTTTestSupport
import Testing

@testable import CoatyEdgeAgent

/// IO points with `useRawIoValues` and the built-in value types, in both directions: a device source publishes its
/// readings as the bytes of their JSON text, a raw actor takes any payload (as Coaty JS hands it on), and a GPIO
/// output on a raw actor reads JSON text or words from the bytes.
@Suite(.serialized, .emulatedHardware) struct RawValueTests {
    @Test func rawSourcesPublishAndRawActorsTakeEveryPayload() async throws {
        let broker = try await TestBroker.started()
        let hardware = try EmulatedHardware()
        let gpio = try hardware.addGPIOChip(95, lines: 8)
        let sysfs = FileManager.default.temporaryDirectory.appendingPathComponent("coaty-raw-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: sysfs) }
        let zone = sysfs.appendingPathComponent("class/thermal/thermal_zone0")
        try FileManager.default.createDirectory(at: zone, withIntermediateDirectories: true)
        try Data("45500\n".utf8).write(to: zone.appendingPathComponent("temp"))
        let configuration = #"""
            {
              "common": {"agentIdentity": {"name": "raw"}, "ioContextNodes": {"ctx": {
                "ioSources": [{"objectId": "soc", "name": "SoC", "valueType": "coaty-edge.Temperature[Celsius]", "useRawIoValues": true}],
                "ioActors": [
                  {"objectId": "fan", "name": "Fan", "valueType": "coaty-edge.Temperature[Celsius]", "useRawIoValues": true},
                  {"objectId": "display", "name": "Display", "valueType": "coaty-edge.Temperature[Celsius]", "useRawIoValues": true}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"},
              "devices": {
                "sysfsRoot": "\#(sysfs.path)",
                "sensors": [{"driver": "thermal", "zone": 0, "pollInterval": "100ms", "sources": {"temperature": {"ioSource": "soc"}}}],
                "outputs": [{"driver": "gpio-output", "ioActor": "fan", "chip": "gpiochip95", "line": 2, "initial": "off",
                             "safeState": "off", "hysteresis": {"onAbove": 60, "offBelow": 55}}]
              }
            }
            """#
        let agent = try await EdgeAgent.make(
            AgentConfiguration(base: try Configuration.parse(Array(configuration.utf8), source: "raw.json")))
        let actors = try #require(agent.controller(named: "IoActors", as: IoActorController.self))
        let display = try #require(
            agent.communicationManager.ioNodeDefinitions.flatMap(\.ioActors).first { $0.objectId == "display" })
        let displayed = Recorder(actors.values(of: display))
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let router = scenarios.agent("router")
        try await scenarios.online(router)
        let routes = (
            soc: "coaty/3/-/IOV/soc", fan: "coaty/3/-/IOV/fan-source", display: "coaty/3/-/IOV/display-source"
        )
        let listener = try await TestClient.connected(to: broker, subscribingTo: [routes.soc])
        agent.start()
        try await poll { (try? gpio.state(line: 2).isRequested) == true }
        try await brokerSync(agent.communicationManager)
        func associate(source: String, actor: String, _ route: String) async throws {
            try await router.publishAssociate(
                AssociateEvent(
                    ioContextName: "ctx", ioSourceId: source, ioActorId: actor, associatingRoute: route, updateRate: nil
                ))
        }

        // The device source publishes its reading as raw bytes: the JSON text of the number.
        try await associate(source: "soc", actor: "elsewhere", routes.soc)
        let reading = try await listener.nextMessage(timeout: .seconds(20))
        #expect(reading.topic == routes.soc)
        #expect(String(decoding: reading.payload, as: UTF8.self) == "45.5")

        // A raw actor of a built-in value type takes any payload, bytes as they came.
        try await associate(source: "display-source", actor: "display", routes.display)
        try await associate(source: "fan-source", actor: "fan", routes.fan)
        try await poll {
            agent.communicationManager.ioState(of: "display").hasAssociations
                && agent.communicationManager.ioState(of: "fan").hasAssociations
        }
        try await brokerSync(agent.communicationManager)
        let sender = try await TestClient.connected(to: broker)
        try sender.publish(routes.display, "not a number")
        try sender.publish(routes.display, [0xFF, 0x00, 0x7B])
        try await displayed.wait(count: 2)
        #expect(displayed.elements == [.raw(Array("not a number".utf8)), .raw([0xFF, 0x00, 0x7B])])

        // A GPIO output on a raw actor reads numbers from the bytes' JSON text.
        try sender.publish(routes.fan, "70")
        try await poll(within: .seconds(20)) { (try? gpio.state(line: 2).level) == true }
        try sender.publish(routes.fan, "50.5")
        try await poll(within: .seconds(20)) { (try? gpio.state(line: 2).level) == false }

        await agent.shutdown()
        _ = try await listener.disconnect()
        _ = try await sender.disconnect()
        await scenarios.stop(router)
        try await broker.stop()
    }
}
