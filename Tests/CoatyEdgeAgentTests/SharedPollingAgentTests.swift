import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

@testable import CoatyEdgeAgent

/// An agent's thermal zones are all polled by one task (`SensorPollLoop`): each zone still publishes its own values on
/// its own source, at its own interval, and one that fails is reported and retried while the others go on.
@Suite(.serialized) struct SharedPollingAgentTests {
    @Test func manyZonesOnOneTaskEachPublishTheirOwnValuesAndAFailingOneStallsNoOther() async throws {
        let broker = try await TestBroker.started()
        let sysfs = FileManager.default.temporaryDirectory.appendingPathComponent("coaty-shared-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: sysfs) }
        // Zones 0-29: 20 + n °C, half of them polled every 100 ms and half every 300 ms; zone 30 has no `temp` yet.
        let count = 30
        let failing = count
        for zone in 0...failing {
            let directory = sysfs.appendingPathComponent("class/thermal/thermal_zone\(zone)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            if zone != failing {
                try Data("\((20 + zone) * 1000)\n".utf8).write(to: directory.appendingPathComponent("temp"))
            }
        }
        let sources = (0...failing).map { #"{"objectId": "zone-\#($0)", "name": "Zone \#($0)", "valueType": "t"}"# }
        let sensors = (0...failing).map { zone in
            #"{"driver": "thermal", "zone": \#(zone), "pollInterval": "\#(zone % 2 == 0 ? "100ms" : "300ms")", "#
                + #""retry": {"min": "100ms", "max": "200ms"}, "sources": {"temperature": {"ioSource": "zone-\#(zone)"}}}"#
        }
        let configuration = #"""
            {
              "common": {"agentIdentity": {"name": "zones"}, "ioContextNodes": {"ctx": {"ioSources": [\#(sources.joined(separator: ","))]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"},
              "devices": {"sysfsRoot": "\#(sysfs.path)", "sensors": [\#(sensors.joined(separator: ","))]}
            }
            """#
        let agent = try await EdgeAgent.make(
            AgentConfiguration(base: try Configuration.parse(Array(configuration.utf8), source: "zones.json")))
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let router = scenarios.agent("router")
        let statuses = Recorder(try router.observeAdvertise(objectType: EdgeAgent.deviceStatusObjectType))
        try await scenarios.online(router)
        let listener = try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/-/IOV/#"])
        agent.start()
        try await brokerSync(agent.communicationManager)

        func state(of zone: Int, in status: ReceivedEvent<AdvertiseEvent>) -> String? {
            status.event.object["devices"]?[zone]?["state"]?.stringValue
        }
        try await statuses.wait(within: .seconds(30)) { $0.last.map { state(of: failing, in: $0) } == "failing" }
        #expect(statuses.elements.last.map { state(of: 0, in: $0) } == "ok")

        for zone in 0...failing {
            try await router.publishAssociate(
                AssociateEvent(
                    ioContextName: "ctx", ioSourceId: "zone-\(zone)", ioActorId: "actor",
                    associatingRoute: "coaty/3/-/IOV/zone-\(zone)", updateRate: nil))
        }
        try await poll {
            (0..<count).allSatisfy { agent.communicationManager.ioState(of: "zone-\($0)").hasAssociations }
        }
        try await listener.sync()
        // Every working zone publishes what its file holds on its own route. The test process runs the agent, so
        // a loaded machine may hold its poll loop for a while: read until every zone was heard (or 30 s).
        var values: [String: [String]] = [:]
        func receive(until isDone: () -> Bool, within limit: Duration) async throws {
            let deadline = ContinuousClock.now + limit
            while !isDone() && ContinuousClock.now < deadline {
                let message = try await listener.nextMessage(timeout: .seconds(20))
                values[String(message.topic.dropFirst("coaty/3/-/IOV/".count)), default: []].append(
                    String(decoding: message.payload, as: UTF8.self))
            }
        }
        try await receive(until: { (0..<count).allSatisfy { values["zone-\($0)"] != nil } }, within: .seconds(30))
        for zone in 0..<count {
            let received = values["zone-\(zone)"] ?? []
            #expect(!received.isEmpty && received.allSatisfy { $0 == "\(20 + zone)" }, "zone \(zone): \(received)")
        }
        #expect(values["zone-\(failing)"] == nil)
        // At its own rate: in a window of 3 s a zone polled every 100 ms publishes about three times as often as one
        // polled every 300 ms (more than 1.5 times even when the loop is held now and then; equal rates fail).
        values = [:]
        try await receive(until: { false }, within: .seconds(3))
        let fast = (0..<count).filter { $0 % 2 == 0 }.map { values["zone-\($0)"]?.count ?? 0 }
        let slow = (0..<count).filter { $0 % 2 == 1 }.map { values["zone-\($0)"]?.count ?? 0 }
        #expect(2 * fast.reduce(0, +) > 3 * slow.reduce(0, +), "fast \(fast), slow \(slow)")

        // The failing zone was retried all along: once its file is there, it answers and publishes too.
        try Data("77000\n".utf8).write(
            to: sysfs.appendingPathComponent("class/thermal/thermal_zone\(failing)").appendingPathComponent("temp"))
        try await statuses.wait(within: .seconds(30)) { $0.last.map { state(of: failing, in: $0) } == "ok" }
        while true {
            let message = try await listener.nextMessage(timeout: .seconds(20))
            if message.topic == "coaty/3/-/IOV/zone-\(failing)" {
                #expect(String(decoding: message.payload, as: UTF8.self) == "77")
                break
            }
        }

        await agent.shutdown()
        _ = try await listener.disconnect()
        await scenarios.stop(router)
        try await broker.stop()
    }
}
