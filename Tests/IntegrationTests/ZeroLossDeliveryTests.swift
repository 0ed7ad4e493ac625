import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import CoatyTestSupport
import MQTTTestSupport
import Testing

/// Zero-loss delivery between two agents that opt in, through a real mosquitto that is killed and stopped while
/// values flow.
@Suite struct ZeroLossDeliveryTests {
    let source = IoSource(name: "temperature", valueType: "t")
    let actor = IoActor(name: "display", valueType: "t")
    let plainActor = IoActor(name: "plain display", valueType: "t")

    /// A source agent and an actor agent with zero-loss delivery, an actor agent without (as a Coaty JS actor would
    /// be), all reconnecting within 200 ms, and a plain manager that associates both actors with the source.
    private func associatedAgents(
        _ broker: TestBroker, log: LogLines, zeroLoss: ZeroLossOptions
    ) async throws -> (sources: CommunicationManager, actors: CommunicationManager, others: [CommunicationManager]) {
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let reconnect = MQTTReconnectPolicy(minimumDelay: .milliseconds(50), maximumDelay: .milliseconds(200))
        let sources = CommunicationManager(
            identity: Identity(name: "sources"),
            options: CommunicationOptions(port: broker.port, reconnect: reconnect, zeroLoss: zeroLoss),
            ioNodes: [IoNodeDefinition(contextName: "ctx", ioSources: [source])], logger: log.logger(),
            makeTransport: scenarios.makeTransport)
        let actors = CommunicationManager(
            identity: Identity(name: "actors"),
            options: CommunicationOptions(port: broker.port, reconnect: reconnect, zeroLoss: ZeroLossOptions()),
            ioNodes: [IoNodeDefinition(contextName: "ctx", ioActors: [actor])], makeTransport: scenarios.makeTransport)
        let plainActors = CommunicationManager(
            identity: Identity(name: "plain actors"),
            options: CommunicationOptions(port: broker.port, reconnect: reconnect),
            ioNodes: [IoNodeDefinition(contextName: "ctx", ioActors: [plainActor])],
            makeTransport: scenarios.makeTransport)
        let router = scenarios.agent("router")
        try await scenarios.online(sources, actors, plainActors, router)
        let route = CoatyTopic.ioValueRoute(namespace: "-", sourceId: source.objectId)
        for actorId in [actor.objectId, plainActor.objectId] {
            try await router.publishAssociate(
                AssociateEvent(
                    ioContextName: "ctx", ioSourceId: source.objectId, ioActorId: actorId, associatingRoute: route,
                    updateRate: nil))
        }
        try await poll {
            sources.ioState(of: source.objectId).hasAssociations && actors.ioState(of: actor.objectId).hasAssociations
                && plainActors.ioState(of: plainActor.objectId).hasAssociations
        }
        // The actor agent answered the association: the source keeps values for it.
        try await poll(within: .seconds(20)) { sources.zeroLossBacklog(of: source.objectId).actorAgents == 1 }
        try await brokerSync(plainActors)
        return (sources, actors, [plainActors, router])
    }

    private func number(_ value: IoValue) -> Int? {
        guard case .json(.number(let number)) = value else { return nil }
        return Int(number)
    }

    @Test func brokerRestartsDuringTrafficLoseNothing() async throws {
        let broker = try await TestBroker.started()
        let log = LogLines()
        let (sources, actors, others) = try await associatedAgents(broker, log: log, zeroLoss: ZeroLossOptions())
        let values = Recorder(try actors.observeIoValue(of: actor))
        let plainValues = Recorder(try others[0].observeIoValue(of: plainActor))
        let count = 400
        let producer = Task {
            for value in 1...count {
                _ = try? sources.publishIoValue(.json(.number(Double(value))), of: source)
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        try await values.wait(count: 20, within: .seconds(30))
        try await broker.kill()
        try await Task.sleep(for: .milliseconds(500))
        try await broker.start()
        let afterFirst = values.elements.count
        try await values.wait(count: afterFirst + 20, within: .seconds(30))
        try await broker.stop()
        try await Task.sleep(for: .milliseconds(500))
        try await broker.start()
        await producer.value

        try await values.wait(within: .seconds(60)) { $0.count >= count }
        // Duplicates would come after the last value: give them the time of a few acknowledgements.
        try await Task.sleep(for: .seconds(2))
        #expect(values.elements.map(number) == (1...count).map { Optional($0) })
        #expect(sources.droppedValues(.zeroLossBufferFull) == 0)
        // The actor without zero-loss delivery got the plain values (some lost in the outages), never a frame.
        let plain = plainValues.elements.map(number)
        #expect(!plain.isEmpty && plain.allSatisfy { $0 != nil })
        #expect(plain.compactMap { $0 } == plain.compactMap { $0 }.sorted())
        try await poll(within: .seconds(10)) { sources.zeroLossBacklog(of: source.objectId).values == 0 }

        for agent in [sources, actors] + others { await agent.stop() }
        try await broker.stop()
    }

    /// After a silence longer than the 30 s after which plain copies take over from frames (a broker outage of
    /// two minutes), a plain copy that comes ahead of its frame (as the source flushes them from its offline queue
    /// while it holds its frames until the actor answers) is a duplicate still, and its frame is delivered once.
    /// Before, that copy took over at once, and the backlog's frames that followed it arrived out of order and then
    /// again (measure-outage.sh's 120 s outage: one zone's newest value, then its 1200 values of the outage, then
    /// that value again).
    @Test func aPlainCopyAfterASilenceDoesNotTakeOver() async throws {
        let broker = try await TestBroker.started()
        let log = LogLines()
        let (sources, actors, others) = try await associatedAgents(broker, log: log, zeroLoss: ZeroLossOptions())
        let values = Recorder(try actors.observeIoValue(of: actor))
        for value in 1...5 { #expect(try sources.publishIoValue(.json(.number(Double(value))), of: source)) }
        try await values.wait(count: 5, within: .seconds(30))
        try await Task.sleep(for: .seconds(31))

        let peer = try await TestClient.connected(to: broker)
        try peer.publish(CoatyTopic.ioValueRoute(namespace: "-", sourceId: source.objectId), "6")
        try await brokerSync(actors)
        for value in 6...7 { #expect(try sources.publishIoValue(.json(.number(Double(value))), of: source)) }
        try await values.wait(within: .seconds(30)) { $0.contains(.json(7)) }
        try await Task.sleep(for: .seconds(2))
        #expect(values.elements.map(number) == (1...7).map { Optional($0) })

        for agent in [sources, actors] + others { await agent.stop() }
        try await broker.stop()
    }

    /// An actor whose consumer falls behind, so that the IoActorController's queue of 1000 values is full: with
    /// zero-loss delivery nothing gives way there (the values beyond wait unacknowledged at the source and come in
    /// order once the consumer reads); without it the oldest give way, each counted.
    @Test(arguments: [true, false]) func aSlowActorLosesNothingWithZeroLoss(zeroLoss: Bool) async throws {
        let broker = try await TestBroker.started()
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let reconnect = MQTTReconnectPolicy(minimumDelay: .milliseconds(50), maximumDelay: .milliseconds(200))
        let sources = CommunicationManager(
            identity: Identity(name: "sources"),
            options: CommunicationOptions(port: broker.port, reconnect: reconnect, zeroLoss: ZeroLossOptions()),
            ioNodes: [IoNodeDefinition(contextName: "ctx", ioSources: [source])], makeTransport: scenarios.makeTransport
        )
        let actors = IoActorController()
        let actorAgent = try await Container.resolve(
            configuration: Configuration(
                identity: Identity(name: "actors"), ioNodes: [IoNodeDefinition(contextName: "ctx", ioActors: [actor])],
                communication: CommunicationOptions(
                    port: broker.port, reconnect: reconnect, zeroLoss: zeroLoss ? ZeroLossOptions() : nil)),
            controllers: [("Actors", actors)], makeTransport: scenarios.makeTransport)
        // The consumer's stream is there before the values, and nothing reads it yet.
        let stream = actors.values(of: actor)
        actorAgent.start()
        let router = scenarios.agent("router")
        try await scenarios.online(sources, router)
        try await poll { actorAgent.communicationManager.communicationState == .online }
        try await brokerSync(actorAgent.communicationManager)
        try await router.publishAssociate(
            AssociateEvent(
                ioContextName: "ctx", ioSourceId: source.objectId, ioActorId: actor.objectId,
                associatingRoute: CoatyTopic.ioValueRoute(namespace: "-", sourceId: source.objectId), updateRate: nil))
        try await poll { sources.ioState(of: source.objectId).hasAssociations && actors.isAssociated(actor) }
        if zeroLoss {
            try await poll(within: .seconds(20)) { sources.zeroLossBacklog(of: source.objectId).actorAgents == 1 }
        }
        try await brokerSync(actorAgent.communicationManager)

        let limit = IoActorController.valueBufferLimit
        let count = limit + 500
        for value in 1...count {
            #expect(try sources.publishIoValue(.json(.number(Double(value))), of: source))
            if value % 100 == 0 { try await Task.sleep(for: .milliseconds(10)) }
        }
        if zeroLoss {
            // The actor's agent acknowledged what its actor took, no more: the rest waits at the source.
            try await poll(within: .seconds(30)) {
                sources.zeroLossBacklog(of: source.objectId).values == count - limit
            }
            #expect(actors.overflowedValues(of: actor) == 0)
        } else {
            try await poll(within: .seconds(30)) { actors.overflowedValues(of: actor) == count - limit }
        }
        let values = Recorder(stream)
        let expected = zeroLoss ? Array(1...count) : Array((count - limit + 1)...count)
        try await values.wait(count: expected.count, within: .seconds(60))
        // Duplicates would come after the last value: give them the time of a few acknowledgements.
        try await Task.sleep(for: .seconds(2))
        #expect(values.elements.map(number) == expected.map { Optional($0) })
        #expect(actors.overflowedValues(of: actor) == (zeroLoss ? 0 : count - limit))
        if zeroLoss {
            try await poll(within: .seconds(10)) { sources.zeroLossBacklog(of: source.objectId).values == 0 }
        }

        await actorAgent.shutdown()
        for agent in [sources, router] { await agent.stop() }
        try await broker.stop()
    }

    /// A bounded buffer: while the broker is away the oldest values give way, counted and logged; the newest arrive
    /// after it, in order and once (their plain copies, flushed from the offline queue, are not delivered again).
    @Test func theBufferBoundDropsTheOldestAndCountsThem() async throws {
        let broker = try await TestBroker.started()
        let log = LogLines()
        let (sources, actors, others) = try await associatedAgents(
            broker, log: log, zeroLoss: ZeroLossOptions(maximumValues: 20, maximumBytes: 1 << 20))
        let values = Recorder(try actors.observeIoValue(of: actor))
        #expect(try sources.publishIoValue(.json(1), of: source))
        try await values.wait(count: 1, within: .seconds(20))
        try await poll(within: .seconds(20)) { sources.zeroLossBacklog(of: source.objectId).values == 0 }

        try await broker.stop()
        try await poll { sources.communicationState != .online && actors.communicationState != .online }
        for value in 2...51 {
            #expect(try sources.publishIoValue(.json(.number(Double(value))), of: source))
        }
        #expect(sources.droppedValues(of: source.objectId, .zeroLossBufferFull) == 30)
        #expect(sources.zeroLossBacklog(of: source.objectId).values == 20)
        #expect(
            log.contains(
                "its zero-loss buffer is full (20 values or 1048576 bytes not acknowledged by actor agents); the oldest give way"
            ))

        try await broker.start()
        try await values.wait(within: .seconds(30)) { $0.contains(.json(51)) }
        try await Task.sleep(for: .seconds(2))
        #expect(values.elements.map(number) == ([1] + Array(32...51)).map { Optional($0) })
        #expect(sources.droppedValues(of: source.objectId, .zeroLossBufferFull) == 30)

        for agent in [sources, actors] + others { await agent.stop() }
        try await broker.stop()
    }
}
