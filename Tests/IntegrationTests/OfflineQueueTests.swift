import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// What an agent keeps of its publications while the broker is away, and that every value it cannot send is
/// counted with its reason and logged within a budget.
@Suite struct OfflineQueueTests {
    let source = IoSource(name: "temperature", valueType: "t")
    let actor = IoActor(name: "display", valueType: "t")

    /// A source agent, an actor agent (reconnecting within 200 ms) and a plain manager that associates them.
    /// The source reconnects only after 3 s, so that the actor has subscribed its route again before the source's
    /// queue goes out (QoS 0, clean sessions).
    private func associatedAgents(
        _ broker: TestBroker, log: LogLines, limits: OfflineQueueLimits
    ) async throws -> (sources: CommunicationManager, actors: CommunicationManager, router: CommunicationManager) {
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let sources = CommunicationManager(
            identity: Identity(name: "sources"),
            options: CommunicationOptions(
                port: broker.port, reconnect: MQTTReconnectPolicy(minimumDelay: .seconds(3), maximumDelay: .seconds(3)),
                offlineQueue: limits),
            ioNodes: [IoNodeDefinition(contextName: "ctx", ioSources: [source])], logger: log.logger(),
            makeTransport: scenarios.makeTransport)
        let actors = CommunicationManager(
            identity: Identity(name: "actors"),
            options: CommunicationOptions(
                port: broker.port,
                reconnect: MQTTReconnectPolicy(minimumDelay: .milliseconds(50), maximumDelay: .milliseconds(200))),
            ioNodes: [IoNodeDefinition(contextName: "ctx", ioActors: [actor])], makeTransport: scenarios.makeTransport)
        let router = scenarios.agent("router")
        try await scenarios.online(sources, actors, router)
        try await router.publishAssociate(
            AssociateEvent(
                ioContextName: "ctx", ioSourceId: source.objectId, ioActorId: actor.objectId,
                associatingRoute: CoatyTopic.ioValueRoute(namespace: "-", sourceId: source.objectId), updateRate: nil))
        try await poll {
            sources.ioState(of: source.objectId).hasAssociations && actors.ioState(of: actor.objectId).hasAssociations
        }
        try await brokerSync(actors)
        return (sources, actors, router)
    }

    @Test func whileTheBrokerIsDownTheQueueStaysBoundedCountsWhatGaveWayAndTheNewestValuesArriveInOrder() async throws {
        let broker = try await TestBroker.started()
        let log = LogLines()
        let (sources, actors, router) = try await associatedAgents(
            broker, log: log, limits: OfflineQueueLimits(maximumMessages: 50, maximumBytes: 1 << 20))
        let values = Recorder(try actors.observeIoValue(of: actor))
        #expect(try sources.publishIoValue(.json(1), of: source))
        try await values.wait(count: 1)

        try await broker.stop()
        try await poll { sources.communicationState != .online && actors.communicationState != .online }
        for value in 2...201 {
            #expect(try sources.publishIoValue(.json(.number(Double(value))), of: source))
        }
        // 200 values while offline, 50 kept: the oldest 150 gave way, each counted, and logged within the budget.
        #expect(sources.droppedValues(of: source.objectId, .offlineQueueFull) == 150)
        #expect(sources.droppedValues(.offlineQueueFull) == 150)
        #expect(sources.statistics.ioValuesDropped == 150)
        let dropLines = log.lines.filter {
            $0.contains("the offline queue is full (50 messages or 1048576 bytes); the oldest give way")
        }
        // At most 10 lines per 10 s, counted from the manager's start: the loop takes far less than a period, but
        // can cross the end of one (seen in a clean-clone CI run: 11 lines), so at most two periods' worth.
        #expect((1...20).contains(dropLines.count), "\(log.lines)")

        try await broker.start()
        try await poll(within: .seconds(20)) {
            sources.communicationState == .online && actors.communicationState == .online
        }
        try await values.wait(count: 51)
        // A value after the queue: nothing else of the queue arrives late, and the order holds.
        #expect(try sources.publishIoValue(.json(202), of: source))
        try await values.wait(count: 52)
        #expect(values.elements == ([1] + Array(152...202)).map { IoValue.json(.number(Double($0))) })
        // The join events are never dropped: the identity was advertised again after the reconnect.
        let advertiseTopic = "coaty/3/-/ADV:Identity/\(sources.identity.objectId)"
        try await poll { broker.logText.components(separatedBy: advertiseTopic).count - 1 == 2 }
        #expect(sources.droppedValues(of: source.objectId, .offlineQueueFull) == 150)
        #expect(sources.droppedValues(.stop) == 0)

        for agent in [sources, actors, router] { await agent.stop() }
        try await broker.stop()
    }

    /// Under the `newest` policy the first values are kept and the later ones dropped; the byte bound applies too.
    @Test func theNewestPolicyAndTheByteBoundKeepTheFirstValues() async throws {
        let broker = try await TestBroker.started()
        let log = LogLines()
        // Each value is 3 payload bytes on a route of known length: 10 of them fit.
        let route = CoatyTopic.ioValueRoute(namespace: "-", sourceId: source.objectId)
        let (sources, actors, router) = try await associatedAgents(
            broker, log: log,
            limits: OfflineQueueLimits(
                maximumMessages: 1000, maximumBytes: 10 * (route.utf8.count + 3), dropPolicy: .newest))
        let values = Recorder(try actors.observeIoValue(of: actor))

        try await broker.stop()
        try await poll { sources.communicationState != .online }
        for value in 100...129 {
            #expect(try sources.publishIoValue(.json(.number(Double(value))), of: source))
        }
        #expect(sources.droppedValues(of: source.objectId, .offlineQueueFull) == 20)
        #expect(log.contains("the newest give way"))

        try await broker.start()
        try await values.wait(count: 10, within: .seconds(20))
        #expect(values.elements == (100...109).map { IoValue.json(.number(Double($0))) })
        for agent in [sources, actors, router] { await agent.stop() }
        try await broker.stop()
    }

    /// A stop while offline drops what is queued: counted as "stop", values per source and other events apart.
    @Test func aStopWithQueuedValuesCountsThem() async throws {
        let broker = try await TestBroker.started()
        let log = LogLines()
        let (sources, actors, router) = try await associatedAgents(broker, log: log, limits: OfflineQueueLimits())
        try await broker.stop()
        try await poll { sources.communicationState != .online }
        for value in 1...7 {
            #expect(try sources.publishIoValue(.json(.number(Double(value))), of: source))
        }
        try await sources.publishChannel(ChannelEvent(channelId: "news", content: .objects([])))

        await sources.stop()
        #expect(sources.droppedValues(of: source.objectId, .stop) == 7)
        #expect(sources.droppedEvents(.stop) == 1)
        #expect(sources.droppedValues(.offlineQueueFull) == 0)
        #expect(log.contains("dropped 8 publications: the agent stopped while offline"), "\(log.lines)")
        // Published after the stop: dropped and counted too.
        #expect(try sources.publishIoValue(.json(8), of: source) == false)
        #expect(sources.droppedValues(of: source.objectId, .noAssociation) == 1)
        for agent in [actors, router] { await agent.stop() }
    }

    /// Values handed to libmosquitto but not yet written when the connection breaks are gone (QoS 0): counted as
    /// "connection lost". A frozen broker reads nothing, so the socket's buffers fill and the rest waits in
    /// libmosquitto's queue until the broker is killed. (Those written into the socket's buffers are lost unseen:
    /// QoS 0 has no acknowledgement.)
    @Test func valuesNotYetWrittenWhenTheConnectionBreaksAreCounted() async throws {
        let broker = try await TestBroker.started()
        let log = LogLines()
        let (sources, actors, router) = try await associatedAgents(broker, log: log, limits: OfflineQueueLimits())
        let received = Recorder(try actors.observeIoValue(of: actor))
        broker.send(SIGSTOP)
        let payload = JSONValue.string(String(repeating: "x", count: 4000))
        for index in 0..<5000 {
            #expect(try sources.publishIoValue(.json(payload), of: source))
            // 20 MB of publications take a while: let the suites beside this one run meanwhile.
            if index % 10 == 0 { await Task.yield() }
        }
        try await broker.kill()
        try await poll(within: .seconds(20)) { sources.droppedValues(of: source.objectId, .connectionLost) > 0 }
        let lost = sources.droppedValues(of: source.objectId, .connectionLost)
        // The socket's buffers hold a few MB at most: most of the 20 MB waited in libmosquitto's queue.
        #expect((1000...5000).contains(lost))
        // Counted first, then logged: the line may come a moment after the count.
        try await poll(within: .seconds(20), "the log line of the unwritten publications") {
            log.contains("publications: the connection ended before they were written to it")
        }
        #expect(sources.droppedValues(.offlineQueueFull) == 0)
        try await broker.start()
        try await poll(within: .seconds(20)) {
            sources.communicationState == .online && actors.communicationState == .online
        }
        #expect(try sources.publishIoValue(.json(1), of: source))
        try await received.wait { $0.contains(.json(1)) }
        // libmosquitto discards its queue when it reconnects: what was counted lost does not come late.
        #expect(received.elements == [.json(1)])
        for agent in [sources, actors, router] { await agent.stop() }
    }
}
