import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyTestSupport
import Synchronization
import Testing

@testable import CoatyRuntime

@Suite struct ContainerTests {
    let broker = InMemoryBroker()

    final class RecordingController: Controller {
        let events = Mutex<[String]>([])

        func record(_ event: String) { events.withLock { $0.append(event) } }

        func onInit(_ context: ControllerContext) async throws {
            record("init \(context.options.path)")
        }

        func whileStarted(_ context: ControllerContext) async {
            record("started")
            for await _ in context.communicationManager.observeDeadvertise() {}
            record("ended")
        }

        func onStopping(_ context: ControllerContext) async {
            record("stopping online=\(context.communicationManager.communicationState.isOnline)")
        }

        func onDispose(_ context: ControllerContext) async {
            record("dispose")
        }
    }

    final class FailingController: Controller {
        struct Broken: Error {}
        func onInit(_ context: ControllerContext) async throws { throw Broken() }
    }

    func container(_ name: String, controllers: [(name: String, controller: any Controller)] = []) async throws
        -> Container
    {
        let broker = self.broker
        return try await Container.resolve(
            configuration: Configuration(identity: Identity(name: name)), controllers: controllers,
            makeTransport: { broker.makeTransport() })
    }

    @Test func controllersFollowTheLifecycle() async throws {
        let controller = RecordingController()
        let agent = try await container("agent", controllers: [("Recorder", controller)])
        #expect(agent.controller(named: "Recorder", as: RecordingController.self) === controller)
        agent.start()
        try await poll {
            agent.communicationManager.communicationState.isOnline && controller.events.withLock { $0.count } == 2
        }
        await agent.stop()
        agent.start()
        try await poll { controller.events.withLock { $0.count } == 5 }
        await agent.shutdown()
        #expect(
            controller.events.withLock { $0 } == [
                "init $.controllers.Recorder", "started", "stopping online=true", "ended", "started",
                "stopping online=true", "ended",
                "dispose",
            ])
    }

    @Test func aFailingControllerIsNamed() async {
        await #expect {
            _ = try await container("agent", controllers: [("Broken", FailingController())])
        } throws: { error in
            (error as? ControllerError)?.controller == "Broken"
        }
    }

    @Test func presenceSeesAgentsJoinAndLeave() async throws {
        let watcher = try await container("watcher")
        watcher.start()
        let changes = Recorder(watcher.presence.changes())
        try await poll { watcher.presence.agents.map(\.name) == ["watcher"] }

        let sensors = try await Container.resolve(
            configuration: Configuration(
                identity: Identity(name: "sensors"),
                ioNodes: [IoNodeDefinition(contextName: "ctx", ioSources: [IoSource(name: "t", valueType: "v")])]),
            makeTransport: { [broker] in broker.makeTransport() })
        sensors.start()
        try await poll { watcher.presence.agent(sensors.identity.objectId)?.ioNodes.count == 1 }
        #expect(watcher.presence.agents.map(\.name) == ["sensors", "watcher"])
        #expect(watcher.presence.agent(sensors.identity.objectId)?.ioNodes.first?.ioSources.first?.name == "t")

        await sensors.shutdown()
        try await poll { watcher.presence.agents.map(\.name) == ["watcher"] }
        try await changes.wait {
            $0.contains { if case .left(let agent) = $0 { agent.name == "sensors" } else { false } }
        }

        // An agent that dies leaves through its last will.
        let mortal = broker.makeTransport()
        let identity = Identity(name: "mortal")
        mortal.connect(
            MQTTConnectOptions(
                host: "", clientId: "x",
                will: MQTTMessage(
                    topic: "coaty/3/-/DAD/\(identity.objectId)",
                    payload: DeadvertiseEvent(objectIds: [identity.objectId]).payload.serializedBytes())),
            executor: nil
        ) { _ in }
        try await poll { broker.connectedClientCount == 2 }
        try mortal.publish(
            MQTTMessage(
                topic: "coaty/3/-/ADV:Identity/\(identity.objectId)",
                payload: AdvertiseEvent(object: identity.object).payload.serializedBytes()))
        try await poll { watcher.presence.agent(identity.objectId) != nil }
        await mortal.disconnect(.abrupt)
        try await poll { watcher.presence.agent(identity.objectId) == nil }
        await watcher.shutdown()
    }

    /// An agent whose controllers never look at other agents does not ask for them: n agents that did so on every
    /// connect made about n² answers when a fleet started. The first look starts the census.
    @Test func anAgentTracksPresenceOnlyOnceItIsUsed() async throws {
        let quiet = try await container("quiet")
        let other = try await container("other")
        quiet.start()
        other.start()
        try await poll { broker.publishedMessages.filter { $0.topic.contains("/ADV:Identity/") }.count == 2 }
        // Time for a census to go out, had one been started by the connect.
        try await Task.sleep(for: .milliseconds(500))
        #expect(!quiet.presence.isTracking)
        #expect(broker.publishedMessages.filter { $0.topic.contains("/DSC/") }.isEmpty)

        try await poll { quiet.presence.agents.map(\.name) == ["other", "quiet"] }
        #expect(quiet.presence.isTracking)
        let discovers = broker.publishedMessages.filter { $0.topic.contains("/DSC/") }
        #expect(discovers.count == 2)
        #expect(discovers.allSatisfy { $0.topic.contains("/DSC/\(quiet.identity.objectId)/") })
        #expect(!other.presence.isTracking)
        await other.shutdown()
        try await poll { quiet.presence.agents.map(\.name) == ["quiet"] }
        await quiet.shutdown()
    }

    /// An agent keeps more than a thousand others by default (1500 here, each with an IO node); a Deadvertise of a
    /// node alone takes it from its agent, one of the identity takes the agent.
    @Test func presenceKeepsAFleetOfMoreThanAThousandAgents() async throws {
        let watcher = try await container("watcher")
        watcher.start()
        try await poll { watcher.presence.count == 1 }
        let peer = broker.makeTransport()
        peer.connect(MQTTConnectOptions(host: "", clientId: "fleet"), executor: nil) { _ in }
        try await poll { broker.connectedClientCount == 2 }
        let count = 1500
        for index in 0..<count {
            let identity = Identity(objectId: "agent-\(index)", name: "pi-\(index)")
            try peer.publish(
                MQTTMessage(
                    topic: "coaty/3/-/ADV:Identity/agent-\(index)",
                    payload: AdvertiseEvent(object: identity.object).payload.serializedBytes()))
            let node = IoNode(
                contextName: "Fleet", parentObjectId: "agent-\(index)",
                ioSources: [IoSource(name: "SoC", valueType: "t")], ioActors: [])
            try peer.publish(
                MQTTMessage(
                    topic: "coaty/3/-/ADV:IoNode/agent-\(index)",
                    payload: AdvertiseEvent(object: node.object).payload.serializedBytes()))
        }
        try await poll(within: .seconds(60)) { watcher.presence.agents.filter { $0.ioNodes.count == 1 }.count == count }
        #expect(watcher.presence.refusedCount == 0)

        let first = try #require(watcher.presence.agent("agent-0")?.ioNodes.first)
        try peer.publish(
            MQTTMessage(
                topic: "coaty/3/-/DAD/agent-0",
                payload: DeadvertiseEvent(objectIds: [first.objectId]).payload.serializedBytes()))
        try await poll { watcher.presence.agent("agent-0")?.ioNodes.isEmpty == true }
        try peer.publish(
            MQTTMessage(
                topic: "coaty/3/-/DAD/agent-1",
                payload: DeadvertiseEvent(objectIds: ["agent-1", "agent-2"]).payload.serializedBytes()))
        try await poll { watcher.presence.count == count - 1 }
        #expect(watcher.presence.agent("agent-1") == nil && watcher.presence.agent("agent-2") == nil)
        await peer.disconnect(.clean)
        await watcher.shutdown()
    }

    @Test func presenceDropsAgentsThatVanishedWhileOffline() async throws {
        let watcher = try await container("watcher")
        let other = try await container("other")
        watcher.start()
        other.start()
        try await poll { watcher.presence.agents.count == 2 }
        broker.setUp(false)
        try await poll { !watcher.communicationManager.communicationState.isOnline }
        await other.shutdown()
        broker.setUp(true)
        // The census asks three times (3 s, then 6 and 12 s more) before it takes an agent as gone.
        try await poll(within: .seconds(45)) { watcher.presence.agents.map(\.name) == ["watcher"] }
        await watcher.shutdown()
    }
}
