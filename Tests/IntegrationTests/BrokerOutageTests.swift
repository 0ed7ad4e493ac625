import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// What the agent does when the broker goes away and comes back, and when another agent dies.
@Suite struct BrokerOutageTests {
    @Test func agentReconnectsResubscribesAndPublishesAgainAfterABrokerRestart() async throws {
        let broker = try await TestBroker.started()
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let observer = scenarios.agent("observer")
        // QoS 0 and clean sessions: what the publisher sends before the observer has subscribed again reaches
        // nobody. So the publisher comes back seconds after the observer, which retries every 50-200 ms.
        let publisher = CommunicationManager(
            identity: Identity(name: "publisher"),
            options: CommunicationOptions(
                port: broker.port, reconnect: MQTTReconnectPolicy(minimumDelay: .seconds(3), maximumDelay: .seconds(3))),
            makeTransport: scenarios.makeTransport)
        let states = Recorder(observer.communicationStates())
        let channel = Recorder(try observer.observeChannel("temperature"))
        try await scenarios.online(observer, publisher)
        try await publisher.publishChannel(ChannelEvent(channelId: "temperature", content: .objects([])))
        try await channel.wait(count: 1)

        try await broker.stop()
        try await poll { observer.communicationState != .online && publisher.communicationState != .online }
        // Published while the broker is down: queued, sent after the reconnect.
        try await publisher.publishChannel(ChannelEvent(channelId: "temperature", content: .objects([])))
        try await broker.start()
        try await poll(within: .seconds(20)) {
            observer.communicationState == .online && publisher.communicationState == .online
        }
        try await brokerSync(observer)

        try await channel.wait(count: 2)
        try await publisher.publishChannel(ChannelEvent(channelId: "temperature", content: .objects([])))
        try await channel.wait(count: 3)
        // The identity was advertised again after the reconnect (the broker logs every PUBLISH it receives).
        let advertiseTopic = "coaty/3/-/ADV:Identity/\(publisher.identity.objectId)"
        try await poll { broker.logText.components(separatedBy: advertiseTopic).count - 1 == 2 }

        let sequence = states.elements
        let firstOffline = try #require(sequence.firstIndex(of: .offline))
        let online = sequence.indices.filter { sequence[$0] == .online }
        #expect(online.count == 2)
        #expect(firstOffline == 0)
        #expect(sequence[online[0]..<online[1]].contains(.offline))
        #expect(sequence.contains(.reconnecting(attempt: 1)))
        #expect(observer.statistics.reconnects == 1)
        await scenarios.stop(observer, publisher)
        try await broker.stop()
    }

    /// Another agent process killed with SIGKILL: the broker publishes its last will, and presence drops it.
    @Test func anAgentKilledWithSIGKILLIsSeenAsGoneThroughItsLastWill() async throws {
        let broker = try await TestBroker.started()
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let watcher = scenarios.agent("watcher")
        // The watcher knows itself from its answer to its own census: a census of 300 ms missed that answer in a
        // loaded full run.
        let presence = AgentPresence(manager: watcher, censusTimeout: .seconds(2))
        let tracking = Task { await presence.run() }
        let deadvertised = Recorder(watcher.observeDeadvertise())
        try await scenarios.online(watcher)
        try await poll { presence.agent(watcher.identity.objectId) != nil }

        // The other agent is a separate process with the will a Coaty agent registers.
        let dying = Identity(name: "mortal")
        let will = String(
            decoding: DeadvertiseEvent(objectIds: [dying.objectId]).payload.serializedBytes(), as: UTF8.self)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coaty-dying-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = try ChildProcess(
            try findTool("mosquitto_sub"),
            arguments: [
                "-h", "127.0.0.1", "-p", "\(broker.port)", "-i",
                "Coaty" + dying.objectId.filter { $0 != "-" }.prefix(18),
                "-t", "coaty/3/-/DSC/+/+", "--will-topic", "coaty/3/-/DAD/\(dying.objectId)", "--will-payload", will,
            ],
            errorFile: directory.appendingPathComponent("stderr"))
        try await broker.waitForLog(containing: "Coaty" + dying.objectId.filter { $0 != "-" }.prefix(18))
        let announcer = try await TestClient.connected(to: broker, clientId: "announcer")
        try announcer.publish(
            "coaty/3/-/ADV:Identity/\(dying.objectId)",
            AdvertiseEvent(object: dying.object).payload.serializedBytes())
        try await poll { presence.agent(dying.objectId) != nil }

        process.signal(SIGKILL)
        try await process.waitForExit()
        try await deadvertised.wait { $0.contains { $0.event.objectIds == [dying.objectId] } }
        try await poll { presence.agent(dying.objectId) == nil }
        #expect(presence.agents.map(\.name) == ["watcher"])

        _ = try await announcer.disconnect()
        tracking.cancel()
        await scenarios.stop(watcher)
        try await broker.stop()
    }

    /// After a broker restart, an agent that comes back later than this one (Coaty JS retries every second) misses
    /// the census Discover, but advertises its identity and IO node again: the router keeps routing it and presence
    /// keeps it. An agent that neither answers nor advertises is dropped. The peers are hand-written frames.
    @Test func anAgentThatAdvertisesDuringTheCensusAfterABrokerRestartIsKept() async throws {
        let broker = try await TestBroker.started()
        // The presence census lasts 3 s; the router's as long, so the late agent surely comes back during both.
        let router = IoRouter(context: IoContext(name: "ctx"), censusTimeout: .seconds(3))
        let container = try await Container.resolve(
            configuration: Configuration(
                identity: Identity(name: "router"), communication: CommunicationOptions(port: broker.port)),
            controllers: [("Router", router)])
        let presence = Recorder(container.presence.changes())
        container.start()

        func node(of agent: Identity, valueType: String) -> IoNode {
            IoNode(
                contextName: "ctx", parentObjectId: agent.objectId,
                ioSources: [IoSource(name: "\(agent.name) source", valueType: valueType)],
                ioActors: [IoActor(name: "\(agent.name) actor", valueType: valueType)])
        }
        func advertise(_ agent: Identity, _ node: IoNode) async throws -> TestClient {
            let client = try await TestClient.connected(to: broker)
            for object in [agent.object, node.object] {
                try client.publish(
                    "coaty/3/-/ADV:\(object.coreType.rawValue)/\(agent.objectId)",
                    AdvertiseEvent(object: object).payload.serializedBytes())
            }
            try await client.sync()
            return client
        }
        let late = Identity(name: "late"), gone = Identity(name: "gone")
        let lateNode = node(of: late, valueType: "late"), goneNode = node(of: gone, valueType: "gone")
        try await poll { container.communicationManager.communicationState == .online }
        for client in [try await advertise(late, lateNode), try await advertise(gone, goneNode)] {
            _ = try await client.disconnect()
        }
        try await poll { router.associations.count == 2 && container.presence.agents.count == 3 }

        try await broker.stop()
        try await broker.start()
        // The router's census Discover and presence's went out before the late agent is back.
        let discover =
            "Received PUBLISH from \(container.communicationManager.clientId) (d0, q0, r0, m0, 'coaty/3/-/DSC/"
        try await poll { broker.logText.components(separatedBy: discover).count - 1 == 6 }
        let lateAgain = try await advertise(late, lateNode)

        // The router asks twice more for the node it has not heard of (after 3 s and 6 s more) before it drops it.
        try await poll(within: .seconds(45)) { router.associations.map(\.sourceName) == ["late source"] }
        #expect(router.managedNodeIds == [lateNode.objectId])
        let left = { (changes: [PresenceChange]) in
            changes.compactMap { change -> String? in if case .left(let agent) = change { agent.name } else { nil } }
        }
        // Presence, too, asks twice more before it takes an agent as gone.
        _ = try await presence.wait(within: .seconds(45)) { left($0).contains("gone") }
        try await brokerSync(container.communicationManager)
        #expect(container.presence.agents.map(\.name) == ["late", "router"])
        // mosquitto publishes every client's will when it shuts down, so the router saw itself leave and rejoin.
        #expect(!left(presence.elements).contains("late"))

        _ = try await lateAgain.disconnect()
        await container.shutdown()
        try await broker.stop()
    }

    /// With the default reconnect policy, the first value reaches the actor soon after a broker that was away for
    /// long: the old exponential backoff (1 s doubling to 30 s) had stretched its attempts to 8 s apart after this
    /// outage and came back up to 7 s late; a jittered 0.1 s to 0.3 s comes back within a third of a second.
    @Test func theFirstValueReachesTheActorSoonAfterALongOutage() async throws {
        let broker = try await TestBroker.started()
        let context = "Outage"
        let valueType = "coaty.test.Temperature[Celsius]"
        let source = IoSource(name: "Temperature", valueType: valueType)
        let actor = IoActor(name: "Display", valueType: valueType)
        let sources = IoSourceController()
        let actors = IoActorController()
        // The communication options of an agent configuration without "reconnect": its default policy.
        let communication = try Configuration.parse(
            Array(#"{"communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"}}"#.utf8), source: "agent.json"
        ).communication
        #expect(communication.reconnect == .fastResume)
        func agent(_ name: String, _ node: IoNodeDefinition?, _ controller: (String, any Controller)) async throws
            -> Container
        {
            try await Container.resolve(
                configuration: Configuration(
                    identity: Identity(name: name), ioNodes: node.map { [$0] } ?? [], communication: communication),
                controllers: [controller])
        }
        let sourceAgent = try await agent(
            "source", IoNodeDefinition(contextName: context, ioSources: [source]), ("Sources", sources))
        let actorAgent = try await agent(
            "actor", IoNodeDefinition(contextName: context, ioActors: [actor]), ("Actors", actors))
        let routerAgent = try await agent("router", nil, ("Router", IoRouter(context: IoContext(name: context))))
        let values = Recorder(actors.values(of: actor))
        for agent in [routerAgent, actorAgent, sourceAgent] { agent.start() }
        // 10 values a second, as a polled sensor.
        let producing = Task {
            var count = 0
            while !Task.isCancelled {
                count += 1
                _ = try? sources.publish(.number(Double(count)), from: source)
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
        defer { producing.cancel() }
        _ = try await values.wait(count: 3, within: .seconds(20))

        try await broker.kill()
        try await poll { sourceAgent.communicationManager.communicationState != .online }
        try await Task.sleep(for: .milliseconds(7500))
        let received = values.elements.count
        let restarted = ContinuousClock.now
        try await broker.start()
        _ = try await values.wait(count: received + 1, within: .seconds(30))
        let resume = ContinuousClock.now - restarted
        #expect(resume < .seconds(3), "the first value came \(resume) after the broker was started again")

        producing.cancel()
        for agent in [sourceAgent, actorAgent, routerAgent] { await agent.shutdown() }
        try await broker.stop()
    }
}
