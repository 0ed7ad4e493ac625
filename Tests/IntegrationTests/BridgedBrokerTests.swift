import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import CoatySharedObjects
import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// Agents on different sites, each site with its own mosquitto bridged to a central one (`topic coaty/# both 0`,
/// `try_private true`, as deploy/mosquitto/bridge configures it): routing, context switches, shared objects and
/// presence work across the bridges, and every message arrives exactly once on every broker.
@Suite struct BridgedBrokerTests {
    static let temperature = "coaty.test.Temperature[Celsius]"

    func agent(
        _ name: String, on broker: TestBroker, nodes: [IoNodeDefinition] = [],
        controllers: [(name: String, controller: any Controller)]
    ) async throws -> Container {
        try await Container.resolve(
            configuration: Configuration(
                identity: Identity(name: name), ioNodes: nodes, communication: CommunicationOptions(port: broker.port)),
            controllers: controllers, makeTransport: { () throws(MQTTError) in try MosquittoTransport() })
    }

    /// The IO values every sniffer saw more than once, by broker: `[broker index: [topic and payload]]`. Values are
    /// distinct in these tests, so a second copy is a duplicate that a bridge made. The bridges are flushed first
    /// (a probe from every broker to every other), so that a copy on its way back is counted too.
    static func duplicateValues(_ brokers: BridgedBrokers, _ sniffers: [TestClient]) async throws -> [Int: [String]] {
        try await brokers.waitUntilBridged()
        var duplicates: [Int: [String]] = [:]
        for (index, sniffer) in sniffers.enumerated() {
            var seen: [String: Int] = [:]
            for message in sniffer.pendingMessages where message.topic.contains("/IOV/") {
                seen[message.topic + " " + String(decoding: message.payload, as: UTF8.self), default: 0] += 1
            }
            let repeated = seen.filter { $0.value > 1 }.keys.sorted()
            if !repeated.isEmpty { duplicates[index] = repeated }
        }
        return duplicates
    }

    /// The source on site A, the router on the central broker, the normal actor on site B and the emergency actor on
    /// site A: values reach the actor of the operating state exactly once, a context switch made from site B moves
    /// them, and no broker sees any value twice.
    @Test func routingAndContextSwitchesCrossTheBridgesExactlyOnce() async throws {
        let brokers = try await BridgedBrokers.started(sites: 2)
        let (central, siteA, siteB) = (brokers.central, brokers.sites[0], brokers.sites[1])
        var sniffers: [TestClient] = []
        for broker in brokers.all {
            sniffers.append(try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/#"]))
        }

        let contextName = "Hall"
        let source = IoSource(name: "Boiler", valueType: Self.temperature)
        let normal = IoActor(name: "Normal display", valueType: Self.temperature)
        let emergency = IoActor(name: "Emergency display", valueType: Self.temperature)
        let rules = IoAssociationRules([
            IoAssociationRule(name: "by operating state", valueType: Self.temperature) {
                $0.actorNode.characteristics?["isResponsibleForOperatingState"] == $0.context["operatingState"]
            }
        ])
        var context = IoContext(name: contextName)
        context["operatingState"] = "normal"
        let sources = IoSourceController()
        let normalActors = IoActorController()
        let emergencyActors = IoActorController()
        let router = IoRouter(context: context, rules: rules)
        let sourceAgent = try await agent(
            "source on A", on: siteA, nodes: [IoNodeDefinition(contextName: contextName, ioSources: [source])],
            controllers: [("Sources", sources)])
        let normalAgent = try await agent(
            "normal actor on B", on: siteB,
            nodes: [
                IoNodeDefinition(
                    contextName: contextName, ioActors: [normal],
                    characteristics: ["isResponsibleForOperatingState": "normal"])
            ],
            controllers: [("Actors", normalActors)])
        let emergencyAgent = try await agent(
            "emergency actor on A", on: siteA,
            nodes: [
                IoNodeDefinition(
                    contextName: contextName, ioActors: [emergency],
                    characteristics: ["isResponsibleForOperatingState": "emergency"])
            ],
            controllers: [("Actors", emergencyActors)])
        let routerAgent = try await agent("router on central", on: central, controllers: [("Router", router)])
        let normalValues = Recorder(normalActors.values(of: normal))
        let emergencyValues = Recorder(emergencyActors.values(of: emergency))
        for container in [sourceAgent, normalAgent, emergencyAgent, routerAgent] { container.start() }

        try await poll(within: .seconds(60), "the route from site A to site B") {
            sources.isAssociated(source) && normalActors.isAssociated(normal)
        }
        try await brokerSync(normalAgent.communicationManager)
        // The actor subscribes to the route when it reads the Associate: the subscription travels across the bridge
        // only as the bridge's own `coaty/#`, so a probe through both bridges orders it before the values.
        try await brokers.waitUntilBridged()
        for index in 0..<5 { try sources.publish(.number(Double(index)), from: source) }
        try await normalValues.wait(count: 5, within: .seconds(30))
        #expect(normalValues.elements == (0..<5).map { .json(.number(Double($0))) })

        // A context switch from site B: the router on the central broker answers across one bridge and re-routes.
        var switched = router.context
        switched["operatingState"] = "emergency"
        let completes = Recorder(
            try normalAgent.communicationManager.publishUpdate(
                UpdateEvent(object: switched.object), timeout: .seconds(30)))
        let complete = try #require(try await completes.wait(count: 1, within: .seconds(30)).first)
        #expect(complete.event.object["operatingState"] == "emergency")
        try await poll(within: .seconds(60), "the route to the emergency actor") {
            emergencyActors.isAssociated(emergency) && !normalActors.isAssociated(normal)
                && sources.isAssociated(source)
        }
        try await brokers.waitUntilBridged()
        for index in 10..<15 { try sources.publish(.number(Double(index)), from: source) }
        try await emergencyValues.wait(count: 5, within: .seconds(30))
        #expect(emergencyValues.elements == (10..<15).map { .json(.number(Double($0))) })

        let duplicates = try await Self.duplicateValues(brokers, sniffers)
        #expect(duplicates.isEmpty, "values seen twice, by broker (0 central, 1 site A, 2 site B): \(duplicates)")
        #expect(normalValues.elements.count == 5)
        #expect(emergencyValues.elements.count == 5)
        // The router's Associates crossed both bridges once each: site B's sniffer saw the normal actor's pair
        // associated once and disassociated once.
        let associates = sniffers[2].pendingMessages.filter { $0.topic.hasPrefix("coaty/3/-/ASC:\(contextName)/") }
            .map { String(decoding: $0.payload, as: UTF8.self) }
        #expect(associates.filter { $0.contains(normal.objectId) }.count == 2, "\(associates)")

        for container in [sourceAgent, normalAgent, emergencyAgent, routerAgent] { await container.shutdown() }
        for sniffer in sniffers { _ = try await sniffer.disconnect() }
        try await brokers.stop()
    }

    /// The check above catches a duplicate: with `try_private false` the central broker cannot tell the bridge from
    /// a client and sends every message back to the site it came from, where it arrives a second time.
    @Test func aBridgeWithoutTryPrivateDeliversDuplicatesTheCheckCatches() async throws {
        for tryPrivate in [false, true] {
            let brokers = try await BridgedBrokers.started(
                sites: 2, bridge: BridgedBrokers.Bridge(tryPrivate: tryPrivate))
            var sniffers: [TestClient] = []
            for broker in brokers.all {
                sniffers.append(try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/#"]))
            }
            let publisher = try await TestClient.connected(to: brokers.sites[0])
            for index in 0..<10 { try publisher.publish("coaty/3/-/IOV/\(UUID().uuidString)", "\(index)") }
            let duplicates = try await Self.duplicateValues(brokers, sniffers)
            if tryPrivate {
                #expect(duplicates.isEmpty, "\(duplicates)")
            } else {
                #expect(duplicates.keys.sorted() == [1], "site A gets its own values back: \(duplicates)")
                #expect(duplicates[1]?.count == 10)
            }
            // Each broker saw each value: once, or (site A without try_private) twice.
            for (index, sniffer) in sniffers.enumerated() {
                let values = sniffer.pendingMessages.filter { $0.topic.contains("/IOV/") }
                #expect(values.count == (!tryPrivate && index == 1 ? 20 : 10), "broker \(index)")
            }
            _ = try await publisher.disconnect()
            for sniffer in sniffers { _ = try await sniffer.disconnect() }
            try await brokers.stop()
        }
    }

    /// A shared object hosted on site A is read and changed from site B and watched from the central broker;
    /// a message from the central broker reaches both sites once.
    @Test func sharedObjectsWorkAcrossTheBridges() async throws {
        let brokers = try await BridgedBrokers.started(sites: 2)
        func sharedAgent(_ name: String, on broker: TestBroker) async throws -> (
            CommunicationManager, SharedObjects, Task<Void, Never>
        ) {
            let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport()
            }
            let manager = scenarios.agent(name)
            let shared = SharedObjects(manager: manager, clock: ContinuousClock(), requestTimeout: .seconds(10))
            let task = Task { await shared.run() }
            try await scenarios.online(manager)
            return (manager, shared, task)
        }
        let host = try await sharedAgent("host on A", on: brokers.sites[0])
        let writer = try await sharedAgent("writer on B", on: brokers.sites[1])
        let watcher = try await sharedAgent("watcher on central", on: brokers.central)
        try await host.1.host(SharedObjectDefinition(name: "setpoints", data: ["fanOn": 60]))

        let watching = try await watcher.1.connect("setpoints", ifMissing: .fail)
        let watched = Recorder(watching.events)
        let writing = try await writer.1.connect("setpoints", ifMissing: .fail)
        let written = Recorder(writing.events)
        try await watched.wait(count: 1, within: .seconds(30))
        #expect(watching.snapshot?.hostId == host.0.identity.objectId)

        let change = try await writing.set("fanOn", to: 62)
        #expect(change == SharedChange(key: "fanOn", value: 62, version: 1))
        try await watched.wait(within: .seconds(30)) { $0.contains(.changed(change)) }
        #expect(host.1.hostedObjects.first?.data == ["fanOn": 62])

        try await watching.send(["text": "door open"])
        let message = SharedObjectEvent.message(
            SharedMessage(message: ["text": "door open"], senderId: watcher.0.identity.objectId))
        try await written.wait(within: .seconds(30)) { $0.contains(message) }
        try await brokers.waitUntilBridged()
        #expect(written.elements.filter { $0 == message }.count == 1)
        #expect(written.elements.filter { $0 == .changed(change) }.count == 1)

        for agent in [host, writer, watcher] {
            agent.2.cancel()
            await agent.2.value
            await agent.0.stop()
        }
        try await brokers.stop()
    }

    /// Presence across the bridges: an agent on site A is seen joining on site B and on the central broker, and its
    /// last will (the connection broken without a DISCONNECT, as a crash or a pulled cable does) reaches them too.
    @Test func presenceAndLastWillsCrossTheBridges() async throws {
        let brokers = try await BridgedBrokers.started(sites: 2)
        var observers: [(CommunicationManager, AgentPresence, Recorder<PresenceChange>, Task<Void, Never>)] = []
        for broker in [brokers.sites[1], brokers.central] {
            let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport()
            }
            let manager = scenarios.agent("observer")
            let presence = AgentPresence(manager: manager)
            let changes = Recorder(presence.changes())
            let task = Task { await presence.run() }
            try await scenarios.online(manager)
            observers.append((manager, presence, changes, task))
        }
        let connection = TransportHandle()
        let node = IoNodeDefinition(
            contextName: "Hall", ioSources: [IoSource(name: "Boiler", valueType: Self.temperature)])
        let site = try await Container.resolve(
            configuration: Configuration(
                identity: Identity(name: "agent on A"), ioNodes: [node],
                communication: CommunicationOptions(port: brokers.sites[0].port)),
            controllers: [], makeTransport: connection.capturing { () throws(MQTTError) in try MosquittoTransport() })
        site.start()
        let agentId = site.communicationManager.identity.objectId
        for observer in observers {
            try await observer.2.wait(within: .seconds(30)) { changes in
                changes.contains { if case .joined(let agent) = $0 { agent.agentId == agentId } else { false } }
            }
            // The IO node is a separate advertisement, which may come after the identity.
            try await poll(within: .seconds(30), "the agent's IO node across the bridge") {
                observer.1.agent(agentId)?.ioNodes.first?.ioSources.first?.name == "Boiler"
            }
        }

        await connection.breakOff()
        for observer in observers {
            // Left, by its last will: the site's agent reconnects at once and may have joined again since.
            try await observer.2.wait(within: .seconds(30)) { changes in
                changes.contains { if case .left(let agent) = $0 { agent.agentId == agentId } else { false } }
            }
        }
        await site.shutdown()
        for observer in observers {
            observer.3.cancel()
            await observer.3.value
            await observer.0.stop()
        }
        try await brokers.stop()
    }
}
