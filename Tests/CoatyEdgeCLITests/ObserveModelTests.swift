import CoatyCommunication
import CoatyJSON
import CoatyModel
import Testing

@testable import CoatyEdgeCLI

@Suite struct ObserveModelTests {
    static let source = IoSource(objectId: "s1", name: "Boiler", valueType: "Temperature")
    static let rawSource = IoSource(objectId: "s2", name: "Camera", valueType: "Image", useRawIoValues: true)
    static let actor = IoActor(objectId: "a1", name: "Display", valueType: "Temperature")

    static func agent(
        _ id: String, _ name: String, namespace: String = "-", sources: [IoSource] = [], actors: [IoActor] = []
    )
        -> AgentInfo
    {
        AgentInfo(
            identity: Identity(objectId: id, name: name), namespace: namespace,
            ioNodes: sources.isEmpty && actors.isEmpty
                ? [] : [IoNode(contextName: "Ctx", parentObjectId: id, ioSources: sources, ioActors: actors)])
    }

    @Test func watchesTheDefaultRouteOfEverySourceFromItsAgentsNamespace() {
        var model = ObserveModel(ownAgentId: "me")
        let changes = model.apply(
            .joined(Self.agent("ag1", "Sensors", namespace: "home", sources: [Self.source])), at: 1000)
        #expect(changes.newRoutes == ["coaty/3/home/IOV/s1"])
        #expect(changes.newContexts == ["Ctx"])
        guard case .agentJoined(let joined) = changes.events.first else {
            Issue.record("no join: \(changes.events)")
            return
        }
        #expect(joined.name == "Sensors" && joined.sources.map(\.name) == ["Boiler"])

        // A value on that route is the source's, even though the Associate came before observe started.
        let value = model.applyValue(Array("21.5".utf8), on: "coaty/3/home/IOV/s1", at: 1500)
        guard case .value(let seen)? = value else {
            Issue.record("no value: \(String(describing: value))")
            return
        }
        #expect(seen.sourceId == "s1" && seen.source?.agentName == "Sensors" && seen.value == .json(21.5))
        #expect(model.applyValue([1], on: "coaty/3/home/IOV/unknown", at: 1500) == nil)
    }

    @Test func ignoresItselfAndOtherClients() {
        var model = ObserveModel(ownAgentId: "me")
        #expect(model.apply(.joined(Self.agent("me", "coaty-edge cli")), at: 0) == ObserveModel.Changes())
        #expect(model.apply(.joined(Self.agent("other", "coaty-edge cli")), at: 0) == ObserveModel.Changes())
    }

    @Test func associationsGetNamesAndTheirRoutesAreWatched() {
        var model = ObserveModel(ownAgentId: "me")
        _ = model.apply(.joined(Self.agent("ag1", "Sensors", sources: [Self.source])), at: 0)
        _ = model.apply(.joined(Self.agent("ag2", "Displays", actors: [Self.actor])), at: 0)
        let associate = AssociateEvent(
            ioContextName: "Ctx", ioSourceId: "s1", ioActorId: "a1", associatingRoute: "plant/boiler", updateRate: 500)
        let changes = model.apply(associate, routerId: "router", at: 10)
        #expect(changes.newRoutes == ["plant/boiler"])
        #expect(
            changes.events == [
                .associated(
                    .init(
                        time: 10, context: "Ctx", routerId: "router", sourceId: "s1", sourceName: "Boiler",
                        actorId: "a1", actorName: "Display",
                        route: "plant/boiler", updateRate: 500, rule: nil))
            ])
        // The same association again changes nothing.
        #expect(model.apply(associate, routerId: "router", at: 20).events.isEmpty)
        #expect(model.rows(at: 20).first?.actors == ["Display"])

        let disassociate = AssociateEvent(
            ioContextName: "Ctx", ioSourceId: "s1", ioActorId: "a1", associatingRoute: nil, updateRate: nil)
        let dropped = model.apply(disassociate, routerId: "router", at: 30)
        guard case .disassociated(let change) = dropped.events.first else {
            Issue.record("no disassociation: \(dropped.events)")
            return
        }
        #expect(change.sourceName == "Boiler" && change.actorName == "Display" && change.route == nil)
        #expect(model.rows(at: 30).first?.actors == [])
    }

    /// A Coaty JS router does not answer the associations call, so observe may not know a pair the router
    /// associated before it started; the router's disassociation of that pair is still an event.
    @Test func disassociationOfAPairAssociatedBeforeObserveStartedIsReported() {
        var model = ObserveModel(ownAgentId: "me")
        _ = model.apply(.joined(Self.agent("ag1", "Sensors", sources: [Self.source])), at: 0)
        _ = model.apply(.joined(Self.agent("ag2", "Displays", actors: [Self.actor])), at: 0)
        let disassociate = AssociateEvent(
            ioContextName: "Ctx", ioSourceId: "s1", ioActorId: "a1", associatingRoute: nil, updateRate: nil)
        #expect(
            model.apply(disassociate, routerId: "js-router", at: 40).events == [
                .disassociated(
                    .init(
                        time: 40, context: "Ctx", routerId: "js-router", sourceId: "s1", sourceName: "Boiler",
                        actorId: "a1",
                        actorName: "Display", route: nil, updateRate: nil, rule: nil))
            ])
        #expect(model.rows(at: 40).first?.actors == [])
    }

    @Test func routerAnswersGiveAssociationsWithTheirRules() throws {
        var model = ObserveModel(ownAgentId: "me")
        let result = try JSONValue(
            parsing: #"""
                {"context": {"name": "Ctx", "objectId": "c1", "coreType": "IoContext", "objectType": "coaty.IoContext", "contextVersion": 4},
                 "router": "Router", "associations": [{"sourceId": "s1", "sourceName": "Boiler", "actorId": "a1", "actorName": "Display",
                 "route": "coaty/3/-/IOV/s1", "rule": "temperature-normal", "updateRate": 1000}]}
                """#)
        let changes = model.applyRouterAssociations(result, routerId: "r1", at: 5)
        #expect(changes.events.map(\.kind) == ["context", "associated"])
        guard case .context(let context) = changes.events.first, case .associated(let association) = changes.events.last
        else { return }
        #expect(context.version == 4 && context.name == "Ctx")
        #expect(association.rule == "temperature-normal" && association.updateRate == 1000)
        #expect(changes.newRoutes == ["coaty/3/-/IOV/s1"])
    }

    @Test func rawAndNonJSONValuesAreBytes() {
        var model = ObserveModel(ownAgentId: "me")
        _ = model.apply(.joined(Self.agent("ag1", "Camera", sources: [Self.rawSource, Self.source])), at: 0)
        let raw = model.applyValue(Array("[1]".utf8), on: "coaty/3/-/IOV/s2", at: 1)
        let broken = model.applyValue(Array("{".utf8), on: "coaty/3/-/IOV/s1", at: 1)
        guard case .value(let rawValue)? = raw, case .value(let brokenValue)? = broken else {
            Issue.record("no values")
            return
        }
        #expect(rawValue.value == .bytes(Array("[1]".utf8)))
        #expect(rawValue.value.display() == "<3 bytes> 5b315d")
        #expect(brokenValue.value == .bytes([0x7b]))
        #expect(ObserveEvent.value(rawValue).json["bytes"] == "5b315d")
        #expect(ObserveEvent.value(rawValue).json["length"] == 3)
    }

    @Test func filtersBySourceNameContextAndValueType() {
        var model = ObserveModel(filter: .init(source: "Boiler"), ownAgentId: "me")
        _ = model.apply(.joined(Self.agent("ag1", "Mixed", sources: [Self.source, Self.rawSource])), at: 0)
        #expect(model.applyValue(Array("1".utf8), on: "coaty/3/-/IOV/s1", at: 1) != nil)
        #expect(model.applyValue(Array("1".utf8), on: "coaty/3/-/IOV/s2", at: 1) == nil)
        #expect(model.rows(at: 1).map(\.sourceId) == ["s1"])

        var byType = ObserveModel(filter: .init(valueType: "Image"), ownAgentId: "me")
        _ = byType.apply(.joined(Self.agent("ag1", "Mixed", sources: [Self.source, Self.rawSource])), at: 0)
        #expect(byType.rows(at: 1).map(\.sourceId) == ["s2"])

        var byContext = ObserveModel(filter: .init(context: "Other"), ownAgentId: "me")
        let changes = byContext.apply(.joined(Self.agent("ag1", "Mixed", sources: [Self.source])), at: 0)
        #expect(changes.newContexts.isEmpty)
        #expect(byContext.rows(at: 1).isEmpty)
    }

    @Test func aLeavingAgentTakesItsSourcesAlong() {
        var model = ObserveModel(ownAgentId: "me")
        let agent = Self.agent("ag1", "Sensors", sources: [Self.source])
        _ = model.apply(.joined(agent), at: 0)
        _ = model.applyValue(Array("1".utf8), on: "coaty/3/-/IOV/s1", at: 1)
        #expect(model.rows(at: 2).count == 1)
        let changes = model.apply(.left(agent), at: 3)
        #expect(changes.events.map(\.kind) == ["agentLeft"])
        #expect(model.rows(at: 4).isEmpty)
        #expect(model.apply(.left(agent), at: 5).events.isEmpty)
    }

    @Test func deviceStatusIsReportedWhenItChanges() {
        var model = ObserveModel(ownAgentId: "me")
        var status = CoatyObject(
            coreType: .coatyObject, objectType: "coaty-edge.DeviceStatus", objectId: "d1", name: "devices")
        status.parentObjectId = "ag1"
        status["devices"] = [["label": "TMP102", "state": "ok"]]
        #expect(model.apply(deviceStatus: status, from: "ag1", at: 1) != nil)
        #expect(model.apply(deviceStatus: status, from: "ag1", at: 2) == nil)
        status["devices"] = [["label": "TMP102", "state": "failing", "error": "no answer"]]
        let event = model.apply(deviceStatus: status, from: "ag1", at: 3)
        #expect(event?.line.hasSuffix("devices of ag1: TMP102 failing: no answer") == true)
    }

    @Test func ratesAreValuesPerSecondOverTheWindow() {
        var window = RateWindow(window: 10_000, start: 0)
        #expect(window.rate(at: 500) == nil)
        for time in stride(from: Int64(0), to: 20_000, by: 500) { window.record(time) }
        // 20 values in the last 10 s.
        #expect(window.rate(at: 19_999) == 2)
        // The values stopped at 19.5 s: 9 of them are left in the window.
        #expect(window.rate(at: 25_000) == 0.9)

        var young = RateWindow(window: 10_000, start: 0)
        young.record(1000)
        young.record(2000)
        #expect(young.rate(at: 2000) == 1)
    }

    @Test func eventsAsJSONCarryKindTimeIdsAndNames() {
        var model = ObserveModel(ownAgentId: "me")
        _ = model.apply(.joined(Self.agent("ag1", "Sensors", sources: [Self.source])), at: 0)
        _ = model.applyValue(Array("20".utf8), on: "coaty/3/-/IOV/s1", at: 0)
        let event = model.applyValue(Array("21".utf8), on: "coaty/3/-/IOV/s1", at: 2000)
        #expect(
            event?.json.serialized() == #"""
                {"event":"value","time":2000,"route":"coaty/3/-/IOV/s1","sourceId":"s1","sourceName":"Boiler","valueType":"Temperature","agentId":"ag1","agentName":"Sensors","context":"Ctx","value":21,"rate":0.5}
                """#)
    }

    /// The dashboard starts a page from the model's replay: the events that tell what is known now, and nothing
    /// that has gone (an agent that left, a pair disassociated).
    @Test func replayTellsWhatIsKnownNowAsEvents() throws {
        var model = ObserveModel(ownAgentId: "me")
        let sensors = Self.agent("ag1", "Sensors", sources: [Self.source])
        _ = model.apply(.joined(sensors), at: 0)
        _ = model.apply(.joined(Self.agent("ag2", "Displays", actors: [Self.actor])), at: 0)
        _ = model.apply(.joined(Self.agent("ag3", "Gone soon", sources: [Self.rawSource])), at: 0)
        _ = model.apply(
            AssociateEvent(
                ioContextName: "Ctx", ioSourceId: "s1", ioActorId: "a1", associatingRoute: "r/s1", updateRate: 500),
            routerId: "router", at: 5, rule: "always")
        _ = model.applyValue(Array("21.5".utf8), on: "r/s1", at: 7)
        let context: JSONObject = [
            "name": "Ctx", "objectId": "c1", "coreType": "IoContext", "operatingState": "normal", "contextVersion": 2,
        ]
        _ = model.apply(context: context, at: 8)
        _ = model.apply(.left(Self.agent("ag3", "Gone soon", sources: [Self.rawSource])), at: 9)

        let replay = model.replay(at: 10)
        #expect(replay.map(\.kind) == ["agentJoined", "agentJoined", "context", "associated", "value"])
        #expect(
            replay.first
                == .agentJoined(
                    .init(
                        time: 10, agentId: "ag2", name: "Displays", namespace: "-", sources: [],
                        actors: [
                            .init(
                                id: "a1", name: "Display", valueType: "Temperature", agentId: "ag2",
                                agentName: "Displays", context: "Ctx")
                        ])))
        #expect(replay[2] == .context(.init(time: 10, name: "Ctx", objectId: "c1", version: 2, object: context)))
        #expect(
            replay[3]
                == .associated(
                    .init(
                        time: 10, context: "Ctx", routerId: "router", sourceId: "s1", sourceName: "Boiler",
                        actorId: "a1", actorName: "Display",
                        route: "r/s1", updateRate: 500, rule: "always")))
        guard case .value(let value) = replay[4] else { throw Failure("no value: \(replay)") }
        #expect(value.time == 7 && value.route == "r/s1" && value.sourceId == "s1" && value.value == .json(21.5))

        _ = model.apply(
            AssociateEvent(
                ioContextName: "Ctx", ioSourceId: "s1", ioActorId: "a1", associatingRoute: nil, updateRate: nil),
            routerId: "router", at: 11)
        #expect(!model.replay(at: 12).contains { $0.kind == "associated" })
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
