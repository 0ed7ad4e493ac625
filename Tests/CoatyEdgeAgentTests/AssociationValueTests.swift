import CoatyCommunication
import CoatyIORouting
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import CoatyTestSupport
import EdgeEmulation
import Foundation
import MQTTTestSupport
import Testing

@testable import CoatyEdgeAgent

/// A source's first reading comes before any router associated it, and is dropped. A deadband then holds back every
/// reading that does not move (until the heartbeat, minutes later), and an input publishes only on a change: without
/// more, a freshly associated actor would hear nothing for that long. So a source publishes its latest value a moment
/// after each Associate (`SourceDevices.latestValueDelay`: the actor subscribes to the route only when it reads the
/// same Associate), unless its device has failed since.
@Suite(.serialized, .emulatedHardware) struct AssociationValueTests {
    @Test func aSourcePublishesItsLatestValueWhenItBecomesAssociated() async throws {
        let broker = try await TestBroker.started()
        let hardware = try EmulatedHardware()
        let gpio = try hardware.addGPIOChip(92, lines: 8)
        let sysfs = FileManager.default.temporaryDirectory.appendingPathComponent("coaty-first-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: sysfs) }
        let zone = sysfs.appendingPathComponent("class/thermal/thermal_zone0")
        try FileManager.default.createDirectory(at: zone, withIntermediateDirectories: true)
        let temperature = zone.appendingPathComponent("temp")
        try Data("45000\n".utf8).write(to: temperature)
        let configuration = #"""
            {
              "common": {"agentIdentity": {"name": "board"}, "ioContextNodes": {"ctx": {
                "ioSources": [{"objectId": "soc", "name": "SoC", "valueType": "t"}, {"objectId": "door", "name": "Door", "valueType": "s"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"},
              "devices": {
                "sysfsRoot": "\#(sysfs.path)",
                "sensors": [{"driver": "thermal", "zone": 0, "pollInterval": "100ms", "retry": {"min": "100ms", "max": "100ms"},
                             "sources": {"temperature": {"ioSource": "soc", "filters": [{"deadband": 0.5}, {"heartbeat": "1h"}]}}}],
                "inputs": [{"driver": "gpio-input", "ioSource": "door", "chip": "gpiochip92", "line": 4}]
              }
            }
            """#
        let agent = try await EdgeAgent.make(
            AgentConfiguration(base: try Configuration.parse(Array(configuration.utf8), source: "board.json")))
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let router = scenarios.agent("router")
        try await scenarios.online(router)
        let routes = (soc: "coaty/3/-/IOV/soc", door: "coaty/3/-/IOV/door")
        let listener = try await TestClient.connected(to: broker, subscribingTo: [routes.soc, routes.door])
        agent.start()
        try await poll { (try? gpio.state(line: 4).isRequested) == true }
        try await brokerSync(agent.communicationManager)
        // Several readings of 45 °C have passed the deadband's first value and then been held back by it.
        try await Task.sleep(for: .milliseconds(500))

        func associate(_ source: String, _ route: String?) async throws {
            try await router.publishAssociate(
                AssociateEvent(
                    ioContextName: "ctx", ioSourceId: source, ioActorId: "actor", associatingRoute: route,
                    updateRate: nil))
        }
        try await associate("soc", routes.soc)
        try await associate("door", routes.door)
        let first = try await listener.nextMessages(2, timeout: .seconds(20))
        #expect(
            Set(first.map { "\($0.topic) \(String(decoding: $0.payload, as: UTF8.self))" })
                == ["\(routes.soc) 45", "\(routes.door) false"])

        // Associated again after a while without: the reading held back by the deadband comes again.
        try await associate("soc", nil)
        try await poll { !agent.communicationManager.ioState(of: "soc").hasAssociations }
        try await Task.sleep(for: .milliseconds(300))
        try await associate("soc", routes.soc)
        let again = try await listener.nextMessage(timeout: .seconds(20))
        #expect("\(again.topic) \(String(decoding: again.payload, as: UTF8.self))" == "\(routes.soc) 45")

        // A failed sensor's last value is stale: a new association gets nothing until the sensor answers again.
        try await associate("soc", nil)
        try await poll { !agent.communicationManager.ioState(of: "soc").hasAssociations }
        try FileManager.default.removeItem(at: temperature)
        try await Task.sleep(for: .milliseconds(500))
        try await associate("soc", routes.soc)
        try await poll { agent.communicationManager.ioState(of: "soc").hasAssociations }
        try await Task.sleep(for: .milliseconds(500))
        try await listener.sync()
        try Data("46000\n".utf8).write(to: temperature)
        let recovered = try await listener.nextMessage(timeout: .seconds(20))
        #expect("\(recovered.topic) \(String(decoding: recovered.payload, as: UTF8.self))" == "\(routes.soc) 46")

        await agent.shutdown()
        _ = try await listener.disconnect()
        await scenarios.stop(router)
        try await broker.stop()
    }

    /// The actor reads the same Associate as the source and subscribes to the route after it: a Coaty JS actor, or
    /// one on a busy machine, hundreds of milliseconds later. A value sent at once on association is lost; the
    /// latest value must reach such an actor all the same, and a coaty-edge actor agent each time.
    @Test func anActorThatSubscribesLateGetsTheLatestValue() async throws {
        let broker = try await TestBroker.started()
        let sysfs = FileManager.default.temporaryDirectory.appendingPathComponent("coaty-late-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: sysfs) }
        let zone = sysfs.appendingPathComponent("class/thermal/thermal_zone0")
        try FileManager.default.createDirectory(at: zone, withIntermediateDirectories: true)
        try Data("45000\n".utf8).write(to: zone.appendingPathComponent("temp"))
        let configuration = #"""
            {
              "common": {"agentIdentity": {"name": "board"}, "ioContextNodes": {"ctx": {
                "ioSources": [{"objectId": "soc", "name": "SoC", "valueType": "t"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"},
              "devices": {
                "sysfsRoot": "\#(sysfs.path)",
                "sensors": [{"driver": "thermal", "zone": 0, "pollInterval": "100ms",
                             "sources": {"temperature": {"ioSource": "soc", "filters": [{"deadband": 0.5}, {"heartbeat": "1h"}]}}}]
              }
            }
            """#
        let agent = try await EdgeAgent.make(
            AgentConfiguration(base: try Configuration.parse(Array(configuration.utf8), source: "board.json")))
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let router = scenarios.agent("router")
        try await scenarios.online(router)
        agent.start()
        try await brokerSync(agent.communicationManager)
        // The first reading of 45 °C was dropped (no association yet); the deadband holds back the ones after it.
        try await Task.sleep(for: .milliseconds(500))

        // A raw MQTT actor that subscribes to the route 400 ms after it has read the Associate.
        let route = "coaty/3/-/IOV/soc"
        let slowActor = try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/-/ASC:ctx/+"])
        try await router.publishAssociate(
            AssociateEvent(
                ioContextName: "ctx", ioSourceId: "soc", ioActorId: "slow", associatingRoute: route, updateRate: nil))
        let associate = try await slowActor.nextMessage()
        #expect(String(decoding: associate.payload, as: UTF8.self).contains(route))
        try await Task.sleep(for: .milliseconds(400))
        try await slowActor.subscribe([route])
        let latest = try await slowActor.nextMessage(timeout: .seconds(10))
        #expect("\(latest.topic) \(String(decoding: latest.payload, as: UTF8.self))" == "\(route) 45")
        _ = try await slowActor.disconnect()
        try await router.publishAssociate(
            AssociateEvent(
                ioContextName: "ctx", ioSourceId: "soc", ioActorId: "slow", associatingRoute: nil, updateRate: nil))
        try await poll { !agent.communicationManager.ioState(of: "soc").hasAssociations }

        // A coaty-edge actor agent, associated afresh three times: the latest value each time.
        let display = IoActor(name: "Display", valueType: "t")
        let actors = IoActorController()
        let actorAgent = try await Container.resolve(
            configuration: Configuration(
                identity: Identity(name: "display"),
                ioNodes: [IoNodeDefinition(contextName: "ctx", ioActors: [display])],
                communication: CommunicationOptions(port: broker.port)),
            controllers: [("Actors", actors)])
        let values = Recorder(actors.values(of: display))
        actorAgent.start()
        try await brokerSync(actorAgent.communicationManager)
        for round in 1...3 {
            try await router.publishAssociate(
                AssociateEvent(
                    ioContextName: "ctx", ioSourceId: "soc", ioActorId: display.objectId, associatingRoute: route,
                    updateRate: nil))
            _ = try await values.wait(count: round, within: .seconds(10))
            #expect(values.elements.last == .json(.number(45)), "round \(round)")
            try await router.publishAssociate(
                AssociateEvent(
                    ioContextName: "ctx", ioSourceId: "soc", ioActorId: display.objectId, associatingRoute: nil,
                    updateRate: nil))
            try await poll {
                !actors.isAssociated(display) && !agent.communicationManager.ioState(of: "soc").hasAssociations
            }
        }

        await actorAgent.shutdown()
        await agent.shutdown()
        await scenarios.stop(router)
        try await broker.stop()
    }
}
