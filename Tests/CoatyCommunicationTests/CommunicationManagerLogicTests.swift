import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyTestSupport
import Dispatch
import Synchronization
import Testing

@testable import CoatyCommunication

/// The manager's protocol logic over an in-memory broker. The same behaviours are checked against a real
/// mosquitto in the integration tests.
@Suite struct CommunicationManagerLogicTests {
    let broker = InMemoryBroker()

    func manager(
        _ name: String, namespace: String = "-", crossNamespacing: Bool = false, nodes: [IoNodeDefinition] = []
    ) -> CommunicationManager {
        let broker = self.broker
        return CommunicationManager(
            identity: Identity(name: name),
            options: CommunicationOptions(namespace: namespace, shouldEnableCrossNamespacing: crossNamespacing),
            ioNodes: nodes, makeTransport: { broker.makeTransport() })
    }

    func online(_ manager: CommunicationManager) async throws {
        manager.start()
        try await poll { manager.communicationState == .online }
    }

    @Test func joinsInProtocolOrderWithDeferredPublicationsLast() async throws {
        let node = IoNodeDefinition(contextName: "ctx", ioSources: [IoSource(name: "s", valueType: "t")])
        // A node without sources and actors is dropped, as in Coaty JS.
        let agent = manager("agent", nodes: [node, IoNodeDefinition(contextName: "empty")])
        try await agent.publishChannel(ChannelEvent(channelId: "early", content: .object(Identity().object)))
        #expect(broker.publishedMessages.isEmpty)
        try await online(agent)
        try await poll { broker.publishedMessages.count == 3 }
        let topics = broker.publishedMessages.map(\.topic)
        let id = agent.identity.objectId
        #expect(topics == ["coaty/3/-/ADV:Identity/\(id)", "coaty/3/-/ADV:IoNode/\(id)", "coaty/3/-/CHN:early/\(id)"])
        let advertisedNode = try IoNode(
            validating: try JSONValue(parsing: broker.publishedMessages[1].payload)["object"] ?? .null)
        #expect(advertisedNode.object.parentObjectId == id)
        #expect(advertisedNode.ioSources.map(\.objectId) == node.ioSources.map(\.objectId))
        #expect(agent.ioNodes.map(\.contextName) == ["ctx"])
        await agent.stop()
    }

    /// A publication made from another thread while the manager is connecting (an answer, a value, an observer of
    /// the online state) goes out after the join events, not before the agent has advertised itself.
    @Test func publicationsDuringTheConnectQueueBehindTheJoinEvents() async throws {
        let holder = ManagerHolder()
        let broker = self.broker
        let agent = CommunicationManager(
            identity: Identity(name: "agent"), options: CommunicationOptions(),
            makeTransport: {
                InterruptingTransport(broker.makeTransport()) {
                    holder.manager?.publish(.channel(ChannelEvent(channelId: "eager", content: .objects([]))))
                }
            })
        holder.manager = agent
        try await online(agent)
        try await poll { broker.publishedMessages.count == 2 }
        let id = agent.identity.objectId
        #expect(broker.publishedMessages.map(\.topic) == ["coaty/3/-/ADV:Identity/\(id)", "coaty/3/-/CHN:eager/\(id)"])
        await agent.stop()
    }

    @Test func answersDiscoverForItsIdentityAndNodesIncludingItsOwn() async throws {
        let node = IoNodeDefinition(contextName: "ctx", ioActors: [IoActor(name: "a", valueType: "t")])
        let agent = manager("agent", nodes: [node])
        let asker = manager("asker")
        try await online(agent)
        try await online(asker)

        let identities = Recorder(asker.publishDiscover(.coreTypes([.identity]), timeout: .seconds(30)))
        let names = try await identities.wait(count: 2).map(\.event.object?.name)
        #expect(Set(names) == ["agent", "asker"])

        let byId = Recorder(asker.publishDiscover(.objectId(agent.identity.objectId), timeout: .seconds(30)))
        #expect(try await byId.wait(count: 1).map(\.sourceId) == [agent.identity.objectId])

        let nodes = Recorder(asker.publishDiscover(.coreTypes([.ioNode]), timeout: .seconds(30)))
        let resolved = try await nodes.wait(count: 1)
        #expect(resolved.first?.event.object?.objectId == agent.ioNodes.first?.objectId)

        // Discovering the Identity by object type gets no answer from the manager.
        let byType = Recorder(asker.publishDiscover(.objectTypes(["coaty.Identity"]), timeout: .milliseconds(300)))
        try await byType.waitFinished()
        #expect(byType.elements.isEmpty)
        await agent.stop()
        await asker.stop()
    }

    @Test func echoAndAdvertiseTopicsOfApplicationTypes() async throws {
        let agent = manager("agent")
        let byCore = Recorder(agent.observeAdvertise(coreType: .coatyObject))
        let byType = Recorder(try agent.observeAdvertise(objectType: "com.example.Thing"))
        let byCoreObjectType = Recorder(try agent.observeAdvertise(objectType: "coaty.CoatyObject"))
        try await online(agent)
        try await agent.publishAdvertise(
            AdvertiseEvent(object: CoatyObject(coreType: .coatyObject, objectType: "com.example.Thing", name: "t")))
        try await agent.publishAdvertise(AdvertiseEvent(object: CoatyObject(coreType: .coatyObject, name: "plain")))
        try await byCore.wait(count: 2)
        try await byType.wait(count: 1)
        try await byCoreObjectType.wait(count: 1)
        #expect(byType.elements.first?.sourceId == agent.identity.objectId)
        #expect(byCoreObjectType.elements.first?.event.object.name == "plain")
        await agent.stop()
        try await byCore.waitFinished()
    }

    @Test func namespacesIsolateUnlessCrossNamespacingIsOn() async throws {
        let first = manager("first", namespace: "my-namespace-1")
        let second = manager("second", namespace: "my-namespace-2")
        let everywhere = manager("everywhere", namespace: "my-namespace-11", crossNamespacing: true)
        let seenBySecond = Recorder(try second.observeChannel("c"))
        let seenEverywhere = Recorder(try everywhere.observeChannel("c"))
        for agent in [first, second, everywhere] { try await online(agent) }
        try await first.publishChannel(ChannelEvent(channelId: "c", content: .object(Identity().object)))
        try await seenEverywhere.wait(count: 1)
        #expect(seenEverywhere.elements.first?.namespace == "my-namespace-1")
        try await second.publishChannel(ChannelEvent(channelId: "c", content: .object(Identity().object)))
        try await seenEverywhere.wait(count: 2)
        #expect(seenBySecond.elements.count == 1)
        #expect(seenBySecond.elements.first?.namespace == "my-namespace-2")
        for agent in [first, second, everywhere] { await agent.stop() }
    }

    @Test func updateOfAnApplicationTypeGoesOutTwiceAndCompletesAreChecked() async throws {
        let requester = manager("requester")
        let responder = manager("responder")
        var context = IoContext(name: "ctx", objectType: "com.example.Context")
        context["operatingState"] = "normal"
        let requests = Recorder(try responder.observeUpdate(objectType: "com.example.Context"))
        try await online(requester)
        try await online(responder)
        let completes = Recorder(
            try requester.publishUpdate(UpdateEvent(object: context.object), timeout: .seconds(30)))
        try await requests.wait(count: 1)
        let request = try #require(requests.elements.first)
        #expect(request.event.object["operatingState"] == "normal")
        try await request.respond(CompleteEvent(object: request.event.object))
        await #expect(throws: CoatyError.self) { try await request.respond(CompleteEvent(object: Identity().object)) }
        try await completes.wait(count: 1)
        let updates = broker.publishedMessages.filter { $0.topic.contains("/UPD") }.map(\.topic)
        #expect(updates.count == 2)
        #expect(
            updates.contains { $0.contains("/UPD:IoContext/") }
                && updates.contains { $0.contains("/UPD::com.example.Context/") })
        #expect(Set(updates.map { $0.split(separator: "/").last }).count == 2)
        await requester.stop()
        await responder.stop()
    }

    @Test func responseStreamEndsOnTimeoutAndALateResponseReachesNobody() async throws {
        let agent = manager("agent")
        try await online(agent)
        let late = broker.makeTransport()
        late.connect(MQTTConnectOptions(host: "", clientId: "late"), executor: nil) { _ in }
        try await poll { broker.connectedClientCount == 2 }
        let responses = Recorder(agent.publishDiscover(.coreTypes([.task]), timeout: .milliseconds(100)))
        try await responses.waitFinished()
        #expect(responses.elements.isEmpty)
        let discover = try #require(broker.publishedMessages.first { $0.topic.hasPrefix("coaty/3/-/DSC/") })
        let correlationId = try #require(discover.topic.split(separator: "/").last)
        // A Resolve that does not answer the Discover (an Identity, not a Task): while the request waited, it would
        // be counted as rejected. Its topic stays subscribed until a later request's upkeep gives it up, so it
        // arrives, and the ended request's observer is gone.
        let received = agent.statistics.messagesReceived
        let resolve = #"{"object":{"name":"x","objectType":"coaty.Identity","coreType":"Identity","objectId":"a"}}"#
        try late.publish(MQTTMessage(topic: "coaty/3/-/RSV/x/\(correlationId)", payload: Array(resolve.utf8)))
        try await poll("the late Resolve") { agent.statistics.messagesReceived > received }
        #expect(agent.statistics.responsesRejected == 0)
        #expect(agent.statistics.messagesRejected == 0)
        await late.disconnect(.clean)
        await agent.stop()
    }

    @Test func reconnectResubscribesAndReadvertises() async throws {
        let agent = manager("agent")
        let states = Recorder(agent.communicationStates())
        let channel = Recorder(try agent.observeChannel("c"))
        try await online(agent)
        broker.setUp(false)
        try await poll { agent.communicationState != .online }
        try await agent.publishChannel(ChannelEvent(channelId: "c", content: .object(Identity().object)))
        broker.setUp(true)
        try await channel.wait(count: 1)
        #expect(states.elements.first == .offline)
        #expect(states.elements.contains(.reconnecting(attempt: 1)))
        #expect(states.elements.filter { $0 == .online }.count == 2)
        let advertises = broker.publishedMessages.filter { $0.topic.hasPrefix("coaty/3/-/ADV:Identity/") }
        #expect(advertises.count == 2)
        #expect(agent.statistics.reconnects == 1)
        await agent.stop()
    }

    @Test func stopDeadvertisesEndsObservationsAndCanRestart() async throws {
        let source = IoSource(name: "s", valueType: "t")
        let agent = manager("agent", nodes: [IoNodeDefinition(contextName: "ctx", ioSources: [source])])
        let watcher = manager("watcher")
        let deadvertised = Recorder(watcher.observeDeadvertise())
        try await online(watcher)
        try await online(agent)
        let firstNodeId = try #require(agent.ioNodes.first?.objectId)
        let ioStates = Recorder(try agent.observeIoState(of: source.objectId))
        let operating = Recorder(agent.operatingStates())
        await agent.stop()
        try await deadvertised.wait(count: 1)
        #expect(deadvertised.elements.first?.event.objectIds == [agent.identity.objectId, firstNodeId])
        try await ioStates.waitFinished()
        #expect(ioStates.elements == [IoState(hasAssociations: false), IoState(hasAssociations: false)])
        try await operating.wait(count: 2)
        #expect(operating.elements == [.started, .stopped])
        #expect(agent.communicationState == .offline)

        try await online(agent)
        #expect(agent.ioNodes.first?.objectId != firstNodeId)
        await agent.stop()
        await watcher.stop()
    }

    /// One stream for many points (the IoSource controller's): every Associate that concerns one of them, in order,
    /// with the state it left, not only the state at the time the consumer looks (a disassociation followed at once by
    /// an association is two states); points it was not asked for stay out; the manager's stop ends it.
    @Test func observeIoStatesDeliversEveryAssociateOfItsPointsInOrder() async throws {
        let sources = [
            IoSource(name: "s1", valueType: "t"), IoSource(name: "s2", valueType: "t"),
            IoSource(name: "s3", valueType: "t"),
        ]
        let agent = manager("agent", nodes: [IoNodeDefinition(contextName: "ctx", ioSources: sources)])
        let router = manager("router")
        #expect(throws: CoatyError.self) { try agent.observeIoStates(of: [sources[0].objectId, "no such point"]) }
        let states = Recorder(try agent.observeIoStates(of: [sources[0].objectId, sources[1].objectId]))
        try await online(router)
        try await online(agent)
        func associate(_ source: IoSource, _ isAssociated: Bool) async throws {
            try await router.publishAssociate(
                AssociateEvent(
                    ioContextName: "ctx", ioSourceId: source.objectId, ioActorId: "actor",
                    associatingRoute: isAssociated
                        ? CoatyTopic.ioValueRoute(namespace: "-", sourceId: source.objectId) : nil,
                    updateRate: nil))
        }
        try await associate(sources[0], true)
        try await associate(sources[2], true)
        try await associate(sources[0], false)
        try await associate(sources[0], true)
        try await associate(sources[1], true)
        let name = { (id: String) in sources.first { $0.objectId == id }?.name ?? id }
        let received = try await states.wait(count: 6)
        #expect(
            received.map { "\(name($0.pointId)) \($0.state.hasAssociations)" } == [
                "s1 false", "s2 false", "s1 true", "s1 false", "s1 true", "s2 true",
            ])
        await agent.stop()
        try await states.waitFinished()
        #expect(
            states.elements.dropFirst(6).map { "\(name($0.pointId)) \($0.state.hasAssociations)" }.sorted() == [
                "s1 false", "s2 false",
            ])
        await router.stop()
    }

    @Test func malformedMessagesAreCountedNotFatal() async throws {
        let agent = manager("agent")
        try await online(agent)
        let rogue = broker.makeTransport()
        rogue.connect(MQTTConnectOptions(host: "", clientId: "rogue"), executor: nil) { _ in }
        try await poll { broker.connectedClientCount == 2 }
        let discovers = Recorder(agent.observeDiscover())
        for payload in ["", "{", "null", #"{"objectId":null}"#, #"{"coreTypes":"Identity"}"#] {
            try rogue.publish(MQTTMessage(topic: "coaty/3/-/DSC/x/y", payload: Array(payload.utf8)))
        }
        try rogue.publish(MQTTMessage(topic: "coaty/3/-/DSC/x/y", payload: Array(#"{"coreTypes":["Task"]}"#.utf8)))
        try await discovers.wait(count: 1)
        try await poll { agent.statistics.messagesRejected == 5 }
        await rogue.disconnect(.clean)
        await agent.stop()
    }

    @Test func rawTopicsAreKeptApartFromCoaty() async throws {
        let agent = manager("agent")
        #expect(throws: CoatyError.self) { try agent.observeRaw(filter: "coaty/#") }
        #expect(throws: CoatyError.self) { try agent.publishRaw(topic: "coaty/foo/bar/baz", payload: [1]) }
        #expect(throws: CoatyError.self) { try agent.publishRaw(topic: "a/+", payload: [1]) }
        let raw = Recorder(try agent.observeRaw(filter: "/test/+/"))
        let all = Recorder(try agent.observeRaw(filter: "#"))
        try await online(agent)
        for byte: UInt8 in [1, 2, 3] {
            try agent.publishRaw(topic: "/test/42/", payload: [byte])
        }
        try await raw.wait(count: 3)
        #expect(raw.elements.map(\.payload) == [[1], [2], [3]])
        #expect(raw.elements.allSatisfy { $0.topic == "/test/42/" })
        try await agent.publishAdvertise(AdvertiseEvent(object: Identity().object))
        try await all.wait(count: 3)
        await agent.stop()
        #expect(all.elements.allSatisfy { !$0.topic.hasPrefix("coaty/") })
    }

    @Test func ioValuesFlowOnlyWhileAssociated() async throws {
        let jsonSource = IoSource(name: "temperature", valueType: "t")
        let rawSource = IoSource(name: "bytes", valueType: "b", useRawIoValues: true)
        let jsonActor = IoActor(name: "display", valueType: "t")
        let rawActor = IoActor(name: "sink", valueType: "b", useRawIoValues: true)
        let sources = manager(
            "sources", nodes: [IoNodeDefinition(contextName: "ctx", ioSources: [jsonSource, rawSource])])
        let actors = manager("actors", nodes: [IoNodeDefinition(contextName: "ctx", ioActors: [jsonActor, rawActor])])
        let router = manager("router")
        for agent in [sources, actors, router] { try await online(agent) }

        #expect(try sources.publishIoValue(.json(1), of: jsonSource) == false)
        #expect(throws: CoatyError.ioValueFormatMismatch(sourceId: jsonSource.objectId)) {
            try sources.publishIoValue(.raw([1]), of: jsonSource)
        }
        let sourceStates = Recorder(try sources.observeIoState(of: jsonSource.objectId))
        let values = Recorder(try actors.observeIoValue(of: jsonActor))
        let bytes = Recorder(try actors.observeIoValue(of: rawActor))
        for (source, actor) in [(jsonSource.objectId, jsonActor.objectId), (rawSource.objectId, rawActor.objectId)] {
            try await router.publishAssociate(
                AssociateEvent(
                    ioContextName: "ctx", ioSourceId: source, ioActorId: actor,
                    associatingRoute: CoatyTopic.ioValueRoute(namespace: "-", sourceId: source), updateRate: 500))
        }
        try await sourceStates.wait(count: 2)
        #expect(
            sourceStates.elements == [IoState(hasAssociations: false), IoState(hasAssociations: true, updateRate: 500)])
        try await poll { actors.ioState(of: rawActor.objectId).hasAssociations }

        #expect(try sources.publishIoValue(.json(21.5), of: jsonSource))
        #expect(try sources.publishIoValue(.json(["celsius": 22.5]), of: jsonSource))
        #expect(try sources.publishIoValue(.raw(Array("raw-bytes".utf8)), of: rawSource))
        try await values.wait(count: 2)
        try await bytes.wait(count: 1)
        #expect(values.elements == [.json(21.5), .json(["celsius": 22.5])])
        #expect(bytes.elements == [.raw(Array("raw-bytes".utf8))])
        let wire = broker.publishedMessages.filter {
            $0.topic == CoatyTopic.ioValueRoute(namespace: "-", sourceId: jsonSource.objectId)
        }
        #expect(wire.map { String(decoding: $0.payload, as: UTF8.self) } == ["21.5", #"{"celsius":22.5}"#])

        try await router.publishAssociate(
            AssociateEvent(
                ioContextName: "ctx", ioSourceId: jsonSource.objectId, ioActorId: jsonActor.objectId,
                associatingRoute: nil, updateRate: nil))
        try await sourceStates.wait(count: 3)
        #expect(sourceStates.elements.last == IoState(hasAssociations: false))
        #expect(try sources.publishIoValue(.json(99.9), of: jsonSource) == false)
        #expect(sources.statistics.ioValuesDropped == 2)
        for agent in [sources, actors, router] { await agent.stop() }
    }
}

final class ManagerHolder: Sendable {
    private let state = Mutex<CommunicationManager?>(nil)

    var manager: CommunicationManager? {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}

/// An in-memory transport that, when the manager first subscribes after connecting, runs `interruption` on another
/// thread and gives it a moment to finish: the step between being connected and having advertised.
final class InterruptingTransport: MQTTTransport, Sendable {
    private let inner: InMemoryTransport
    private let interruption: Mutex<(@Sendable () -> Void)?>

    init(_ inner: InMemoryTransport, interruption: @escaping @Sendable () -> Void) {
        self.inner = inner
        self.interruption = Mutex(interruption)
    }

    var connectionEvents: AsyncStream<MQTTConnectionEvent> { inner.connectionEvents }

    func connect(
        _ options: MQTTConnectOptions, executor: ConnectionExecutor?,
        onMessage handler: @escaping @Sendable (MQTTInbound) -> Void
    ) {
        inner.connect(options, executor: executor, onMessage: handler)
    }

    func publish(_ message: MQTTMessage) throws(MQTTError) { try inner.publish(message) }

    func subscribe(_ topicFilter: String) throws(MQTTError) {
        try inner.subscribe(topicFilter)
        guard let interruption = interruption.withLock({ $0.take() }) else { return }
        // The manager may hold its lock here, so the other thread may have to wait for it: do not wait forever.
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            interruption()
            done.signal()
        }
        _ = done.wait(timeout: .now() + .milliseconds(200))
    }

    func unsubscribe(_ topicFilter: String) throws(MQTTError) { try inner.unsubscribe(topicFilter) }

    func disconnect(_ mode: MQTTDisconnectMode) async { await inner.disconnect(mode) }
}
