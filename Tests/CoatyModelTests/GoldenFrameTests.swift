import CoatyJSON
import Testing

@testable import CoatyModel

/// Our encoding reproduces what Coaty JS 2.4.1 sends, byte for byte.
@Suite struct GoldenFrameTests {
    @Test func everyCapturedFrameDecodesAndReencodesByteForByte() throws {
        for frame in capturedCoatyJSFrames {
            let decoded = CoatyCodec.decode(topic: frame.topic, payload: Array(frame.payload.utf8))
            guard case .success(.event(let topic, let event)) = decoded else {
                Issue.record("\(frame.topic) was not decoded: \(decoded)")
                continue
            }
            #expect(topic.description == frame.topic)
            #expect(event.payload.serialized() == frame.payload, "\(frame.topic)")
            // What is published: the members written straight as text, without the `JSONObject`.
            #expect(event.serializedBytes() == Array(frame.payload.utf8), "\(frame.topic)")
        }
    }

    private func captured(_ topic: String) throws -> String {
        try #require(capturedCoatyJSFrames.first { $0.topic == topic }?.payload)
    }

    @Test func identityAdvertiseAsCoatyJSBuildsIt() throws {
        let identity = Identity(objectId: "11111111-1111-4111-8111-111111111111", name: "Identity Probe")
        let event = AdvertiseEvent(object: identity.object)
        #expect(event.topicFilters == ["Identity"])
        let topic = CoatyTopic(namespace: "-", eventType: .advertise, filter: "Identity", sourceId: identity.objectId)
        #expect(topic.description == "coaty/3/-/ADV:Identity/11111111-1111-4111-8111-111111111111")
        #expect(event.payload.serialized() == (try captured(topic.description)))
    }

    @Test func configuredIdentityKeepsCoatyJSMemberOrder() throws {
        let configured = try Identity(configured: [
            "name": "Source Agent", "objectId": "22222222-2222-4222-8222-222222222222",
        ])
        #expect(
            configured.object.json.serialized()
                == #"{"objectId":"22222222-2222-4222-8222-222222222222","name":"Source Agent","objectType":"coaty.Identity","coreType":"Identity"}"#
        )
        let forced = try Identity(configured: ["coreType": "User", "objectType": "x"])
        #expect(forced.object.coreType == .identity)
        #expect(CoatyUUID.isVersion4(forced.objectId))
        #expect(forced.name == "Coaty Agent")
    }

    @Test func ioNodeAdvertiseAsCoatyJSBuildsIt() throws {
        let actor1 = IoActor(
            objectId: "a731fc40-c0f8-486f-b5b6-b653c3cabaea", name: "Temperature Actor 1",
            valueType: "coaty.test.Temperature[Celsius]")
        let actor2 = IoActor(
            objectId: "a60a74f3-3d26-446f-a358-911867544944", name: "Raw Actor 2", valueType: "coaty.test.RawBytes",
            useRawIoValues: true)
        let node = IoNode(
            contextName: "TemperatureMeasurement", objectId: "de19e85a-b64c-4404-b425-ec383ccb30a8",
            parentObjectId: "33333333-3333-4333-8333-333333333333", ioSources: [], ioActors: [actor1, actor2],
            characteristics: ["isResponsibleForOperatingState": "normal"])
        let payload = AdvertiseEvent(object: node.object).payload.serialized()
        #expect(payload == (try captured("coaty/3/-/ADV:IoNode/33333333-3333-4333-8333-333333333333")))
        #expect(node.ioActors == [actor1, actor2])
        #expect(node.ioActors[1].useRawIoValues)
        #expect(!node.ioActors[0].useRawIoValues)
    }

    @Test func ioContextWithApplicationPropertyAsTheRouterSendsIt() throws {
        var context = IoContext(
            objectId: "55555555-5555-4555-8555-555555555555", name: "TemperatureMeasurement",
            objectType: "coaty.test.TemperatureIoContext")
        context["operatingState"] = "normal"
        context.parentObjectId = "44444444-4444-4444-8444-444444444444"
        let event = AdvertiseEvent(object: context.object)
        #expect(event.topicFilters == ["IoContext", ":coaty.test.TemperatureIoContext"])
        let topics = event.topicFilters.map {
            CoatyTopic(
                namespace: "-", eventType: .advertise, filter: $0, sourceId: "44444444-4444-4444-8444-444444444444"
            ).description
        }
        for topic in topics {
            #expect(event.payload.serialized() == (try captured(topic)))
        }
    }

    @Test func associateAndDisassociateAsTheRouterSendsThem() throws {
        let topic = "coaty/3/-/ASC:TemperatureMeasurement/44444444-4444-4444-8444-444444444444"
        let source = "c547e5cd-ef99-4ccd-b109-fc472fc2d421"
        let associate = AssociateEvent(
            ioContextName: "TemperatureMeasurement", ioSourceId: source,
            ioActorId: "a731fc40-c0f8-486f-b5b6-b653c3cabaea",
            associatingRoute: CoatyTopic.ioValueRoute(namespace: "-", sourceId: source), updateRate: nil)
        let frames = capturedCoatyJSFrames.filter { $0.topic == topic }.map(\.payload)
        #expect(frames.contains(associate.payload.serialized()))
        var disassociate = associate
        disassociate.associatingRoute = nil
        #expect(frames.contains(disassociate.payload.serialized()))
        #expect(!associate.payload.serialized().contains("isExternalRoute"))
        var withRate = associate
        withRate.updateRate = 100
        #expect(withRate.payload.serialized().hasSuffix(#","updateRate":100}"#))
    }

    @Test func discoverAndDeadvertiseAsCoatyJSSendsThem() {
        #expect(DiscoverEvent.coreTypes([.ioNode]).payload.serialized() == #"{"coreTypes":["IoNode"]}"#)
        #expect(
            DiscoverEvent.objectTypes(["coaty.test.TemperatureIoContext"]).payload.serialized()
                == #"{"objectTypes":["coaty.test.TemperatureIoContext"]}"#)
        #expect(
            DeadvertiseEvent(objectIds: [
                "22222222-2222-4222-8222-222222222222", "d0d336d1-7074-4453-be36-4a4f29d2b414",
            ]).payload.serialized()
                == #"{"objectIds":["22222222-2222-4222-8222-222222222222","d0d336d1-7074-4453-be36-4a4f29d2b414"]}"#)
    }

    /// The constructed frames of the protocol reference, section 1.10.
    @Test func constructedFramesOfTheProtocolReference() {
        let identity = Identity(objectId: "5f0c1a52-3f4b-4d7e-9a51-2c0e8b7d9a10", name: "Swift Agent")
        #expect(
            CoatyTopic(namespace: "-", eventType: .advertise, filter: "Identity", sourceId: identity.objectId)
                .description
                == "coaty/3/-/ADV:Identity/5f0c1a52-3f4b-4d7e-9a51-2c0e8b7d9a10")
        #expect(
            AdvertiseEvent(object: identity.object).payload.serialized()
                == #"{"object":{"objectId":"5f0c1a52-3f4b-4d7e-9a51-2c0e8b7d9a10","name":"Swift Agent","objectType":"coaty.Identity","coreType":"Identity"}}"#
        )
        #expect(
            CoatyTopic(namespace: "-", eventType: .deadvertise, sourceId: identity.objectId).description
                == "coaty/3/-/DAD/5f0c1a52-3f4b-4d7e-9a51-2c0e8b7d9a10")
        let correlationId = "0b6f5f8e-7c0d-4f9e-b1a4-6a2d3c4e5f60"
        #expect(
            CoatyTopic(namespace: "-", eventType: .discover, sourceId: identity.objectId, correlationId: correlationId)
                .description
                == "coaty/3/-/DSC/5f0c1a52-3f4b-4d7e-9a51-2c0e8b7d9a10/0b6f5f8e-7c0d-4f9e-b1a4-6a2d3c4e5f60")
        #expect(DiscoverEvent.coreTypes([.ioNode]).payload.serialized() == #"{"coreTypes":["IoNode"]}"#)
        #expect(
            CoatyTopic(namespace: "-", eventType: .resolve, sourceId: "r", correlationId: correlationId).description
                == "coaty/3/-/RSV/r/0b6f5f8e-7c0d-4f9e-b1a4-6a2d3c4e5f60")
        let call = CallEvent(
            operation: "com.example.lights.switch", parameters: ["on": true],
            filter: ContextFilter("floor", .between(6, 8)))
        #expect(
            CoatyTopic(
                namespace: "-", eventType: .call, filter: call.operation, sourceId: identity.objectId,
                correlationId: correlationId
            ).description
                == "coaty/3/-/CLL:com.example.lights.switch/5f0c1a52-3f4b-4d7e-9a51-2c0e8b7d9a10/0b6f5f8e-7c0d-4f9e-b1a4-6a2d3c4e5f60"
        )
        #expect(call.payload.serialized() == #"{"parameters":{"on":true},"filter":{"conditions":["floor",[4,6,8]]}}"#)
        #expect(
            CoatyTopic(namespace: "-", eventType: .returnEvent, sourceId: "r", correlationId: correlationId).description
                == "coaty/3/-/RTN/r/0b6f5f8e-7c0d-4f9e-b1a4-6a2d3c4e5f60")
        #expect(
            ReturnEvent(.result(["on": true]), executionInfo: ["duration": 12]).payload.serialized()
                == #"{"result":{"on":true},"executionInfo":{"duration":12}}"#)
        #expect(
            ReturnEvent(ReturnEvent.invalidParameters).payload.serialized()
                == #"{"error":{"code":-32602,"message":"Invalid params"}}"#)
    }

    /// Each event adds its members once for both forms; the text published (written without the `JSONObject`) is
    /// that of the object, for every kind of event and with every optional member present or absent.
    @Test func publishedTextIsThatOfThePayloadObject() throws {
        let object = CoatyObject(coreType: .coatyObject, objectType: "com.example.Item", objectId: "o1", name: "Item")
        let privateData: JSONObject = ["note": "a \"quoted\" line\n", "n": 1.5]
        let events: [CoatyEvent] = [
            .advertise(AdvertiseEvent(object: object)),
            .advertise(AdvertiseEvent(object: object, privateData: privateData)),
            .deadvertise(DeadvertiseEvent(objectIds: ["a", "b"])),
            .deadvertise(DeadvertiseEvent(objectIds: [])),
            .channel(ChannelEvent(channelId: "c", content: .object(object))),
            .channel(ChannelEvent(channelId: "c", content: .objects([object, object]), privateData: privateData)),
            .associate(
                AssociateEvent(
                    ioContextName: "x", ioSourceId: "s", ioActorId: "a", associatingRoute: "r", updateRate: 100)),
            .associate(
                AssociateEvent(
                    ioContextName: "x", ioSourceId: "s", ioActorId: "a", associatingRoute: nil, updateRate: nil)
            ),
            .discover(.objectId("o1")), .discover(.externalId("e", objectTypes: ["t"], coreTypes: [.ioNode])),
            .discover(.coreTypes([.ioNode, .identity])),
            .resolve(ResolveEvent(object: object)),
            .resolve(ResolveEvent(object: object, relatedObjects: [object], privateData: privateData)),
            .query(QueryEvent(coreTypes: [.task])),
            .query(
                QueryEvent(
                    objectTypes: ["t"], objectFilter: ObjectFilter(take: 2),
                    objectJoinConditions: .single(
                        ObjectJoinCondition(localProperty: "parentObjectId", asProperty: "parent")))),
            .retrieve(RetrieveEvent(objects: [])),
            .retrieve(RetrieveEvent(objects: [object], privateData: privateData)),
            .update(UpdateEvent(object: object)),
            .complete(CompleteEvent(object: object, privateData: privateData)),
            .call(CallEvent(operation: "op")),
            .call(CallEvent(operation: "op", parameters: [1, "two"], filter: ContextFilter("floor", .between(6, 8)))),
            .returnEvent(ReturnEvent(.result(.null))),
            .returnEvent(ReturnEvent(ReturnEvent.invalidParameters, executionInfo: ["duration": 12])),
        ]
        for event in events {
            #expect(event.serializedBytes() == JSONValue.object(event.payload).serializedBytes(), "\(event)")
            #expect(event.serializedCount == event.serializedBytes().count)
        }
        #expect(CoatyEvent.call(CallEvent(operation: "op")).serialized() == "{}")
        #expect(
            CoatyEvent.advertise(AdvertiseEvent(object: object)).topicFilter == ("CoatyObject", ":com.example.Item"))
        #expect(CoatyEvent.update(UpdateEvent(object: Identity(name: "i").object)).topicFilter == ("Identity", nil))
        #expect(CoatyEvent.channel(ChannelEvent(channelId: "c", content: .objects([]))).topicFilter == ("c", nil))
        #expect(CoatyEvent.discover(.objectId("o1")).topicFilter == (nil, nil))
        #expect(
            CoatyEvent.channel(ChannelEvent(channelId: "c", content: .objects([]))).serialized() == #"{"objects":[]}"#)
    }

    @Test func subscriptionFiltersAsCoatyJSSubscribes() {
        #expect(CoatyTopic.subscriptionFilter(namespace: "-", eventType: .discover) == "coaty/3/-/DSC/+/+")
        #expect(
            CoatyTopic.subscriptionFilter(namespace: "-", eventType: .associate, filter: "TemperatureMeasurement")
                == "coaty/3/-/ASC:TemperatureMeasurement/+")
        #expect(
            CoatyTopic.subscriptionFilter(namespace: "-", eventType: .advertise, filter: "IoNode")
                == "coaty/3/-/ADV:IoNode/+")
        #expect(CoatyTopic.subscriptionFilter(namespace: "-", eventType: .deadvertise) == "coaty/3/-/DAD/+")
        #expect(
            CoatyTopic.subscriptionFilter(
                namespace: "-", eventType: .resolve, correlationId: "0aa93cd8-e3fa-40a1-bfd0-6ffc6c8dda81")
                == "coaty/3/-/RSV/+/0aa93cd8-e3fa-40a1-bfd0-6ffc6c8dda81")
        #expect(
            CoatyTopic.subscriptionFilter(namespace: "-", eventType: .update, filter: "IoContext")
                == "coaty/3/-/UPD:IoContext/+/+")
        #expect(CoatyTopic.subscriptionFilter(namespace: nil, eventType: .channel, filter: "c") == "coaty/3/+/CHN:c/+")
    }
}
