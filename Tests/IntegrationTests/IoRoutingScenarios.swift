import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import CoatyTestSupport
import Testing

import CoatyIORouting

/// The IO routing cases of Coaty JS's io-routing spec, run over any transport: the in-memory broker for quick
/// logic checks, a real mosquitto in the integration suite.
struct IoRoutingScenarios {
    var port = 1883
    let makeTransport: @Sendable () throws(MQTTError) -> any MQTTTransport

    static let temperature = "coaty.test.Temperature[Celsius]"

    func agent(
        _ name: String, nodes: [IoNodeDefinition] = [], controllers: [(name: String, controller: any Controller)]
    ) async throws -> Container {
        try await Container.resolve(
            configuration: Configuration(identity: Identity(name: name), ioNodes: nodes, communication: CommunicationOptions(port: port)),
            controllers: controllers,
            makeTransport: makeTransport)
    }

    /// A BasicIoRouter, a source controller and an actor controller in one agent: values arrive in order, all of them.
    func basicRoutingWithinOneContainer() async throws {
        let source = IoSource(name: "Temperature Source", valueType: Self.temperature)
        let actor = IoActor(name: "Temperature Actor", valueType: Self.temperature)
        let sources = IoSourceController()
        let actors = IoActorController()
        let router = IoRouter(context: IoContext(name: "TemperatureMeasurement"))
        let container = try await agent(
            "single", nodes: [IoNodeDefinition(contextName: "TemperatureMeasurement", ioSources: [source], ioActors: [actor])],
            controllers: [("Sources", sources), ("Actors", actors), ("Router", router)])
        let actorAssociations = Recorder(actors.associations(of: actor))
        let values = Recorder(actors.values(of: actor))
        container.start()
        try await actorAssociations.wait(count: 2)
        #expect(actorAssociations.elements == [false, true])
        try await poll { sources.isAssociated(source) }
        try await brokerSync(container.communicationManager)
        let sent: [Double] = (0..<4).map { _ in Double(Int.random(in: -400...400)) / 10 }
        for value in sent { try sources.publish(.number(value), from: source) }
        try await values.wait(count: 4)
        #expect(values.elements == sent.map { .json(.number($0)) })
        #expect(router.associations.map(\.rule) == ["all"])
        await container.shutdown()
        try await poll { !actors.isAssociated(actor) }
    }

    /// Four agents: the context's operating state decides which actor gets the temperatures.
    func routingAcrossContainersDependsOnContext() async throws {
        let s1 = IoSource(name: "Temperature Source 1", valueType: Self.temperature)
        let s2 = IoSource(name: "Temperature Source 2", valueType: Self.temperature)
        let a1 = IoActor(name: "Normal Actor", valueType: Self.temperature)
        let a2 = IoActor(name: "Emergency Actor", valueType: Self.temperature)
        let a3 = IoActor(name: "Incompatible Actor", valueType: "coaty.test.Humidity")
        var context = IoContext(name: "TemperatureMeasurement", objectType: "coaty.test.TemperatureIoContext")
        context["operatingState"] = "normal"
        let rules = IoAssociationRules([
            IoAssociationRule(name: "Route temperature to actors responsible for the operating state", valueType: Self.temperature) {
                $0.actorNode.characteristics?["isResponsibleForOperatingState"] == $0.context["operatingState"]
            },
            IoAssociationRule(name: "Humidity", valueType: "coaty.test.Humidity") { _ in true },
        ])

        let sources = IoSourceController()
        let sourceAgent = try await agent(
            "sources", nodes: [IoNodeDefinition(contextName: "TemperatureMeasurement", ioSources: [s1, s2])],
            controllers: [("Sources", sources)])
        let normalActors = IoActorController()
        let normalAgent = try await agent(
            "normal", nodes: [IoNodeDefinition(contextName: "TemperatureMeasurement", ioActors: [a1], characteristics: ["isResponsibleForOperatingState": "normal"])],
            controllers: [("Actors", normalActors)])
        let emergencyActors = IoActorController()
        let emergencyAgent = try await agent(
            "emergency", nodes: [IoNodeDefinition(contextName: "TemperatureMeasurement", ioActors: [a2], characteristics: ["isResponsibleForOperatingState": "emergency"])],
            controllers: [("Actors", emergencyActors)])
        let routerActors = IoActorController()
        let router = IoRouter(context: context, rules: rules)
        let routerAgent = try await agent(
            "router", nodes: [IoNodeDefinition(contextName: "TemperatureMeasurement", ioActors: [a3])],
            controllers: [("Router", router), ("Actors", routerActors)])

        let s1Associations = Recorder(sources.associations(of: s1))
        let s2Associations = Recorder(sources.associations(of: s2))
        let a1Associations = Recorder(normalActors.associations(of: a1))
        let a2Associations = Recorder(emergencyActors.associations(of: a2))
        let a3Associations = Recorder(routerActors.associations(of: a3))
        let a1Values = Recorder(normalActors.values(of: a1))
        let a2Values = Recorder(emergencyActors.values(of: a2))
        let a3Values = Recorder(routerActors.values(of: a3))
        for container in [normalAgent, emergencyAgent, sourceAgent, routerAgent] { container.start() }

        // Normal state: only the normal actor gets the values, interleaved s1, s2, s1, ...
        try await poll { sources.isAssociated(s1) && sources.isAssociated(s2) && normalActors.isAssociated(a1) }
        try await brokerSync(normalAgent.communicationManager)
        for index in 0..<6 {
            try sources.publish(.number(Double(index)), from: index % 2 == 0 ? s1 : s2)
        }
        try await a1Values.wait(count: 6)
        #expect(a1Values.elements == (0..<6).map { .json(.number(Double($0))) })
        #expect(a1Associations.elements == [false, true])

        // An Update of the context switches the routes to the emergency actor.
        var emergency = try #require(try await discoverContext(sourceAgent, objectType: context.object.objectType))
        emergency["operatingState"] = "emergency"
        let completes = Recorder(try sourceAgent.communicationManager.publishUpdate(UpdateEvent(object: emergency.object), timeout: .seconds(30)))
        let complete = try #require(try await completes.wait(count: 1).first)
        #expect(complete.event.object["operatingState"] == "emergency")
        #expect(complete.event.object[IoRouter.versionProperty] == 1)
        try await poll { emergencyActors.isAssociated(a2) && sources.isAssociated(s1) && sources.isAssociated(s2) && !normalActors.isAssociated(a1) }
        try await brokerSync(emergencyAgent.communicationManager)
        for index in 0..<6 {
            try sources.publish(.number(Double(10 + index)), from: index % 2 == 0 ? s1 : s2)
        }
        try await a2Values.wait(count: 6)
        #expect(a2Values.elements == (0..<6).map { .json(.number(Double(10 + $0))) })
        #expect(a1Values.elements.count == 6)
        #expect(a1Associations.elements == [false, true, false])
        #expect(a2Associations.elements == [false, true])
        #expect(s1Associations.elements == [false, true, false, true])
        #expect(s2Associations.elements == [false, true, false, true])
        // Incompatible value types never associate.
        #expect(a3Associations.elements == [false])
        #expect(a3Values.elements.isEmpty)

        // A stale Update (older version) is refused and changes nothing.
        var stale = emergency
        stale["operatingState"] = "normal"
        stale[IoRouter.versionProperty] = 0
        let refused = Recorder(try sourceAgent.communicationManager.publishUpdate(UpdateEvent(object: stale.object), timeout: .seconds(30)))
        let refusal = try #require(try await refused.wait(count: 1).first)
        #expect(refusal.event.privateData?["refused"]?.stringValue?.contains("stale version 0") == true)
        #expect(router.context["operatingState"] == "emergency")

        // Shutting the router down disassociates the emergency actor.
        await routerAgent.shutdown()
        try await a2Associations.wait(count: 3)
        #expect(a2Associations.elements == [false, true, false])
        for container in [sourceAgent, normalAgent, emergencyAgent] { await container.shutdown() }
    }

    private func discoverContext(_ container: Container, objectType: String) async throws -> IoContext? {
        let resolves = Recorder(container.communicationManager.publishDiscover(.objectTypes([objectType]), timeout: .seconds(30)))
        guard let object = try await resolves.wait(count: 1).first?.event.object else { return nil }
        return try IoContext(object)
    }
}
