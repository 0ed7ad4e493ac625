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
                ioNodes: [IoNodeDefinition(contextName: "ctx", ioSources: [jsonSource, rawSource], ioActors: [jsonActor, rawActor])],
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
        #expect(Set(associates) == [
            #"{"ioSourceId":"\#(jsonSource.objectId)","ioActorId":"\#(jsonActor.objectId)","associatingRoute":"coaty/3/-/IOV/\#(jsonSource.objectId)","updateRate":250}"#,
            #"{"ioSourceId":"\#(rawSource.objectId)","ioActorId":"\#(rawActor.objectId)","associatingRoute":"coaty/3/-/IOV/\#(rawSource.objectId)"}"#,
        ])
        let values = frames.filter { $0.topic.contains("/IOV/") }
        #expect(values.first { $0.topic.hasSuffix(jsonSource.objectId) }.map(text) == #"{"celsius":22.5,"ts":1700000000000}"#)
        #expect(values.first { $0.topic.hasSuffix(rawSource.objectId) }?.payload == Array("raw-bytes".utf8))
        #expect(frames.allSatisfy { !$0.retain })
        await container.shutdown()
        _ = try await sniffer.disconnect()
        try await broker.stop()
    }
}
