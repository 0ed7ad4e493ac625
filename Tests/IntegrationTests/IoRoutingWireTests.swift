import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import CoatyTestSupport
import MQTTTestSupport
import Testing

/// What IO routing puts on a real broker, seen by a plain MQTT client: the frames a Coaty JS agent expects.
@Suite struct IoRoutingWireTests {
    @Test func ioValuesAreBareAndAssociatesCarryNoLocalFields() async throws {
        let broker = try await TestBroker.started()
        let sniffer = try await TestClient.connected(to: broker, subscribingTo: ["coaty/#"])
        let jsonSource = IoSource(name: "json", valueType: "t")
        let rawSource = IoSource(name: "raw", valueType: "r", useRawIoValues: true)
        let jsonActor = IoActor(name: "display", valueType: "t", updateRate: 250)
        let rawActor = IoActor(name: "sink", valueType: "r", useRawIoValues: true)
        let sources = IoSourceController()
        let container = try await Container.resolve(
            configuration: Configuration(
                identity: Identity(name: "wire"),
                ioNodes: [
                    IoNodeDefinition(
                        contextName: "ctx", ioSources: [jsonSource, rawSource], ioActors: [jsonActor, rawActor])
                ],
                communication: CommunicationOptions(port: broker.port)),
            controllers: [("Sources", sources), ("Router", IoRouter(context: IoContext(name: "ctx")))])
        container.start()
        try await poll { sources.isAssociated(jsonSource) && sources.isAssociated(rawSource) }
        try await brokerSync(container.communicationManager)
        try sources.publish(["celsius": 22.5, "ts": 1_700_000_000_000], from: jsonSource)
        try sources.publish(raw: Array("raw-bytes".utf8), from: rawSource)

        var frames: [MQTTMessage] = []
        while !(frames.contains { $0.topic.hasSuffix("/IOV/\(jsonSource.objectId)") }
            && frames.contains { $0.topic.hasSuffix("/IOV/\(rawSource.objectId)") })
        {
            frames.append(try await sniffer.nextMessage())
        }
        let text = { (message: MQTTMessage) in String(decoding: message.payload, as: UTF8.self) }
        let associates = frames.filter { $0.topic.hasPrefix("coaty/3/-/ASC:ctx/") }.map(text)
        #expect(
            Set(associates) == [
                #"{"ioSourceId":"\#(jsonSource.objectId)","ioActorId":"\#(jsonActor.objectId)","associatingRoute":"coaty/3/-/IOV/\#(jsonSource.objectId)","updateRate":250}"#,
                #"{"ioSourceId":"\#(rawSource.objectId)","ioActorId":"\#(rawActor.objectId)","associatingRoute":"coaty/3/-/IOV/\#(rawSource.objectId)"}"#,
            ])
        let values = frames.filter { $0.topic.contains("/IOV/") }
        #expect(
            values.first { $0.topic.hasSuffix(jsonSource.objectId) }.map(text)
                == #"{"celsius":22.5,"ts":1700000000000}"#)
        #expect(values.first { $0.topic.hasSuffix(rawSource.objectId) }?.payload == Array("raw-bytes".utf8))
        #expect(frames.allSatisfy { !$0.retain })
        await container.shutdown()
        _ = try await sniffer.disconnect()
        try await broker.stop()
    }

    /// External routes (section 3.7): the router associates on the source's `externalRoute`, a topic outside
    /// Coaty. The Coaty source publishes its bare values there for any MQTT client, and the actor subscribes to it,
    /// so a producer outside Coaty feeds the actor as well.
    @Test func externalRoutesCarryBareValuesBothWays() async throws {
        let broker = try await TestBroker.started()
        let route = "plant/line1/temperature"
        let sniffer = try await TestClient.connected(to: broker, subscribingTo: [route, "coaty/3/-/ASC:ctx/+"])
        let source = IoSource(name: "line 1", valueType: "t", externalRoute: route)
        let actor = IoActor(name: "display", valueType: "t")
        let sources = IoSourceController()
        let actors = IoActorController()
        let container = try await Container.resolve(
            configuration: Configuration(
                identity: Identity(name: "external"),
                ioNodes: [IoNodeDefinition(contextName: "ctx", ioSources: [source], ioActors: [actor])],
                communication: CommunicationOptions(port: broker.port)),
            controllers: [
                ("Sources", sources), ("Actors", actors), ("Router", IoRouter(context: IoContext(name: "ctx"))),
            ])
        let values = Recorder(actors.values(of: actor))
        container.start()
        try await poll { sources.isAssociated(source) && actors.isAssociated(actor) }
        try await brokerSync(container.communicationManager)

        let associate = try await sniffer.nextMessage()
        #expect(
            String(decoding: associate.payload, as: UTF8.self)
                == #"{"ioSourceId":"\#(source.objectId)","ioActorId":"\#(actor.objectId)","associatingRoute":"\#(route)"}"#
        )
        try sources.publish(21.5, from: source)
        let sent = try await sniffer.nextMessage()
        #expect(sent.topic == route)
        #expect(String(decoding: sent.payload, as: UTF8.self) == "21.5")

        let producer = try await TestClient.connected(to: broker)
        try producer.publish(route, #"{"celsius":22.5}"#)
        try await values.wait(count: 2)
        #expect(values.elements == [.json(21.5), .json(["celsius": 22.5])])

        await container.shutdown()
        _ = try await producer.disconnect()
        _ = try await sniffer.disconnect()
        try await broker.stop()
    }
}
