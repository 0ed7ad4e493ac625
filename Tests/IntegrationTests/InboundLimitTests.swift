import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Synchronization
import Testing

/// What an agent does with payloads over its `maximumInboundPayload`, sent through a real mosquitto: drops them
/// unread, counts and logs them, and goes on with the next message.
@Suite(.timeLimit(.minutes(1))) struct InboundLimitTests {
    static let limit = CommunicationOptions.defaultMaximumInboundPayload

    /// `prefix`, padding and `suffix`, `size` bytes in all: a valid Coaty payload with a member Coaty ignores.
    static func padded(_ prefix: String, _ suffix: String = #""}"#, to size: Int) -> [UInt8] {
        let padding = String(repeating: "x", count: size - prefix.utf8.count - suffix.utf8.count)
        return Array((prefix + padding + suffix).utf8)
    }

    static func discover(size: Int) -> [UInt8] { padded(#"{"coreTypes":["Identity"],"padding":""#, to: size) }

    static func agent(_ broker: TestBroker, _ log: LogLines, limit: Int? = nil, ioNodes: [IoNodeDefinition] = [])
        -> CommunicationManager
    {
        var options = CommunicationOptions(port: broker.port)
        if let limit { options.maximumInboundPayload = limit }
        return CommunicationManager(
            identity: Identity(name: "limited"), options: options, ioNodes: ioNodes, logger: log.logger())
    }

    @Test("a Discover over the limit is dropped before parsing, counted and logged; the next one is answered")
    func oversizedDiscover() async throws {
        let broker = try await TestBroker.started()
        let log = LogLines()
        let agent = Self.agent(broker, log)
        agent.start()
        try await brokerSync(agent)
        let peer = try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/-/RSV/+/+"])

        try peer.publish("coaty/3/-/DSC/peer/over", Self.discover(size: Self.limit + 1))
        try peer.publish("coaty/3/-/DSC/peer/at", Self.discover(size: Self.limit))
        try peer.publish("coaty/3/-/DSC/peer/small", Self.discover(size: 100))
        let answers = try await peer.nextMessages(2)
        #expect(answers.map { $0.topic.split(separator: "/").last } == ["at", "small"])
        let statistics = agent.statistics
        #expect(statistics.messagesOversized == 1)
        #expect(statistics.messagesRejected == 1)
        #expect(
            log.contains(
                "dropped a message of \(Self.limit + 1) bytes on coaty/3/-/DSC/peer/over: larger than the limit"))
        await agent.stop()
        try await broker.stop()
    }

    @Test("an IoNode advertisement over the limit never reaches an observer; the next one does")
    func oversizedAdvertise() async throws {
        let broker = try await TestBroker.started()
        let log = LogLines()
        let agent = Self.agent(broker, log)
        let nodes = Recorder(agent.observeAdvertise(coreType: .ioNode))
        agent.start()
        try await brokerSync(agent)
        let peer = try await TestClient.connected(to: broker)
        func advertisement(name: String, size: Int) -> [UInt8] {
            Self.padded(
                #"{"object":{"coreType":"IoNode","objectType":"coaty.IoNode","objectId":"\#(CoatyUUID.random())","name":"\#(name)","#
                    + #""ioSources":[],"ioActors":[],"padding":""#, #""}}"#, to: size)
        }
        try peer.publish("coaty/3/-/ADV:IoNode/peer", advertisement(name: "huge", size: Self.limit + 1))
        try peer.publish("coaty/3/-/ADV:IoNode/peer", advertisement(name: "normal", size: 300))
        try await nodes.wait(count: 1)
        try await brokerSync(agent)
        #expect(nodes.elements.map(\.event.object.name) == ["normal"])
        #expect(agent.statistics.messagesOversized == 1)
        await agent.stop()
        try await broker.stop()
    }

    @Test("an IO value over the limit is dropped before it reaches the actor; the next value does")
    func oversizedIoValue() async throws {
        let broker = try await TestBroker.started()
        let log = LogLines()
        let actor = IoActor(name: "relay", valueType: "t")
        let agent = Self.agent(broker, log, ioNodes: [IoNodeDefinition(contextName: "ctx", ioActors: [actor])])
        let values = Recorder(try agent.observeIoValue(of: actor))
        agent.start()
        try await brokerSync(agent)
        let peer = try await TestClient.connected(to: broker)
        let route = "coaty/3/-/IOV/peer-source"
        let association =
            #"{"ioSourceId":"peer-source","ioActorId":"\#(actor.objectId)","associatingRoute":"\#(route)"}"#
        try peer.publish("coaty/3/-/ASC:ctx/peer", association)
        try await poll { agent.ioState(of: actor.objectId).hasAssociations }
        try await brokerSync(agent)

        // The actor's own handler (as the IoActorController's) learns of the drop, to count it as a rejected value.
        let rejections = Mutex<[String]>([])
        try await agent.handleIoValues(
            of: actor, { _ in }, rejected: { reason in rejections.withLock { $0.append(reason) } },
            while: {
                do {
                    try peer.publish(route, Self.padded(#"""#, #"""#, to: Self.limit + 1))
                    try peer.publish(route, "21.5")
                    try await values.wait(count: 1)
                    try await brokerSync(agent)
                } catch {
                    Issue.record(error)
                }
            })
        // Sizes, not values: a failure would print the 256 KiB value.
        #expect(values.elements.map(\.payload.count) == [4])
        #expect(values.elements.last == .json(21.5))
        #expect(
            rejections.withLock { $0 } == [
                "a value of \(Self.limit + 1) bytes, larger than the limit of \(Self.limit) bytes"
            ])
        #expect(agent.statistics.messagesOversized == 1)
        #expect(log.contains("dropped a message of \(Self.limit + 1) bytes on \(route)"))
        await agent.stop()
        try await broker.stop()
    }

    @Test("the limit is the agent's option: a smaller one drops what the default admits, a larger one admits more")
    func limitIsConfigurable() async throws {
        let broker = try await TestBroker.started()
        let log = LogLines()
        let strict = Self.agent(broker, log, limit: 2048)
        let lenient = Self.agent(broker, log, limit: 4 * Self.limit)
        strict.start()
        lenient.start()
        try await brokerSync(strict)
        try await brokerSync(lenient)
        let peer = try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/-/RSV/+/+"])

        try peer.publish("coaty/3/-/DSC/peer/mid", Self.discover(size: 3000))
        try peer.publish("coaty/3/-/DSC/peer/large", Self.discover(size: 2 * Self.limit))
        try peer.publish("coaty/3/-/DSC/peer/small", Self.discover(size: 2000))
        // The lenient agent answers all three, the strict one only the small one.
        let answers = try await peer.nextMessages(4)
        func answered(by agent: CommunicationManager) -> [String] {
            answers.filter { $0.topic.contains("/RSV/\(agent.identity.objectId)/") }.compactMap {
                $0.topic.split(separator: "/").last.map(String.init)
            }
        }
        #expect(answered(by: strict) == ["small"])
        #expect(answered(by: lenient) == ["mid", "large", "small"])
        #expect(strict.statistics.messagesOversized == 2)
        #expect(lenient.statistics.messagesOversized == 0)
        await strict.stop()
        await lenient.stop()
        try await broker.stop()
    }

    /// JSON nested deeper than the parser's limit is refused as malformed (a recursive parser would overflow the
    /// network thread's stack); nesting within the limit in a member Coaty ignores is answered as usual.
    @Test("a deeply nested payload is rejected, not a crash")
    func deepNesting() async throws {
        let broker = try await TestBroker.started()
        let log = LogLines()
        let agent = Self.agent(broker, log)
        let presence = AgentPresence(manager: agent, censusTimeout: .milliseconds(200))
        let tracking = Task { await presence.run() }
        agent.start()
        try await brokerSync(agent)
        let peer = try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/-/RSV/+/+"])

        let deep = #"{"coreTypes":["Identity"],"padding":"# + String(repeating: "[", count: 200_000)
        try peer.publish("coaty/3/-/DSC/peer/deep", deep)
        let nested =
            #"{"coreTypes":["Identity"],"padding":"# + String(repeating: "[", count: 500)
            + String(repeating: "]", count: 500) + "}"
        try peer.publish("coaty/3/-/DSC/peer/nested", nested)
        try peer.publish("coaty/3/-/DSC/peer/small", Self.discover(size: 100))
        let answers = try await peer.nextMessages(2)
        #expect(answers.map { $0.topic.split(separator: "/").last } == ["nested", "small"])
        #expect(agent.statistics.messagesRejected == 1)
        #expect(agent.statistics.messagesOversized == 0)
        #expect(log.contains("nesting deeper than 512 levels"))

        // Nesting just within the limit travels through what an agent does with another agent's node: decoding,
        // comparing with what it knew, measuring for the presence limits.
        let characteristics = String(repeating: #"{"a":"#, count: 500) + "1" + String(repeating: "}", count: 500)
        try peer.publish(
            "coaty/3/-/ADV:Identity/peer",
            #"{"object":{"coreType":"Identity","objectType":"coaty.Identity","objectId":"peer","name":"peer"}}"#)
        let node =
            #"{"object":{"coreType":"IoNode","objectType":"coaty.IoNode","objectId":"deep-node","name":"ctx","ioSources":[],"#
            + #""ioActors":[],"characteristics":\#(characteristics)}}"#
        try peer.publish("coaty/3/-/ADV:IoNode/peer", node)
        try peer.publish("coaty/3/-/ADV:IoNode/peer", node)
        try await poll { presence.agent("peer")?.ioNodes.map(\.objectId) == ["deep-node"] }
        tracking.cancel()
        await agent.stop()
        await tracking.value
        try await broker.stop()
    }
}
