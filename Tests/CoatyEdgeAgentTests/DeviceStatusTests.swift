import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import CoatyTestSupport
import EdgeEmulation
import MQTTTestSupport
import Testing

@testable import CoatyEdgeAgent

/// A sensor that stops answering is reported (to every agent, through the device status object) and retried,
/// and it recovers by itself when the chip answers again.
@Suite(.serialized, .emulatedHardware) struct DeviceStatusTests {
    @Test func aFailingSensorIsReportedRetriedAndRecovers() async throws {
        let broker = try await TestBroker.started()
        let hardware = try EmulatedHardware()
        let bus = 60
        let busPath = try hardware.addI2CBus(bus)
        let chip = try hardware.addChip(.tmp102, bus: bus, address: 0x49)
        chip.setTemperature(-12.5)
        let configuration = #"""
            {
              "common": {"agentIdentity": {"name": "cellar"}, "ioContextNodes": {"ctx": {"ioSources": [
                {"objectId": "t", "name": "Cellar temperature", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"},
              "devices": {"sensors": [{"driver": "tmp102", "bus": "\#(busPath)", "address": "0x49", "pollInterval": "100ms",
                "retry": {"min": "100ms", "max": "200ms"}, "sources": {"temperature": {"ioSource": "t"}}}]}
            }
            """#
        let agent = try await EdgeAgent.make(
            AgentConfiguration(base: try Configuration.parse(Array(configuration.utf8), source: "cellar.json")))
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let watcher = scenarios.agent("watcher")
        let statuses = Recorder(try watcher.observeAdvertise(objectType: EdgeAgent.deviceStatusObjectType))
        try await scenarios.online(watcher)
        agent.start()

        func state(_ element: ReceivedEvent<AdvertiseEvent>) -> String? {
            element.event.object["devices"]?[0]?["state"]?.stringValue
        }
        try await statuses.wait { $0.last.map(state) == "ok" }
        #expect(
            statuses.elements.last?.event.object["devices"]?[0]?["label"]?.stringValue == "TMP102 at 0x49 on \(busPath)"
        )
        #expect(statuses.elements.last?.event.object.parentObjectId == agent.identity.objectId)

        chip.inject(.noAcknowledge)
        let failing = try await statuses.wait { $0.last.map(state) == "failing" }
        #expect(failing.last?.event.object["devices"]?[0]?["error"]?.stringValue?.hasPrefix("no device:") == true)
        let callsWhileFailing = chip.busCallCount
        try await poll { chip.busCallCount > callsWhileFailing + 2 }  // retried

        chip.inject(nil)
        try await statuses.wait { $0.last.map(state) == "ok" }

        // Any agent can ask for the status too.
        let resolved = Recorder(
            watcher.publishDiscover(.objectTypes([EdgeAgent.deviceStatusObjectType]), timeout: .seconds(30)))
        try await resolved.wait(count: 1)
        #expect(resolved.elements.first?.event.object?["devices"]?[0]?["state"] == "ok")

        await agent.shutdown()
        await scenarios.stop(watcher)
        try await broker.stop()
    }
}
