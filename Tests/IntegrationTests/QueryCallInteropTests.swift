import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyTestSupport
import MQTTTestSupport
import Synchronization
import Testing

/// Query/Retrieve with an ObjectFilter and Call/Return with a ContextFilter between our agents and a peer that sends
/// and expects Coaty JS 2.4.1's frames: a plain MQTT client on a real mosquitto publishes the frames byte for byte as
/// Coaty JS builds them (protocol reference 1.3, 1.5, 1.10, 2.5, 4.7) and checks our answers' topics and bytes; and
/// it reads our requests as Coaty JS would, then answers them with Coaty JS's frames.
@Suite struct QueryCallInteropTests {
    static let jsAgent = "11111111-1111-4111-8111-111111111111"
    static let operation = "com.example.lights.switch"

    /// Objects as a Coaty JS agent builds them (its member order: name, coreType, objectType, objectId, then the
    /// application's properties). Room 8.30 has no wing, the lobby no seats; the desk is of another object type.
    static let rooms = [
        #"{"name":"Room 7.12","coreType":"CoatyObject","objectType":"com.example.Room","objectId":"a7120000-0000-4000-8000-000000000001","floor":7,"wing":"north","seats":12}"#,
        #"{"name":"Room 6.01","coreType":"CoatyObject","objectType":"com.example.Room","objectId":"a6010000-0000-4000-8000-000000000002","floor":6,"wing":"south","seats":4}"#,
        #"{"name":"Room 8.30","coreType":"CoatyObject","objectType":"com.example.Room","objectId":"a8300000-0000-4000-8000-000000000003","floor":8,"seats":30}"#,
        #"{"name":"Lobby","coreType":"CoatyObject","objectType":"com.example.Room","objectId":"a7000000-0000-4000-8000-000000000004","floor":7,"wing":"north"}"#,
        #"{"name":"Room 9.02","coreType":"CoatyObject","objectType":"com.example.Room","objectId":"a9020000-0000-4000-8000-000000000005","floor":9,"wing":"north","seats":2}"#,
    ]
    static let desk =
        #"{"name":"Desk 7.12.1","coreType":"CoatyObject","objectType":"com.example.Desk","objectId":"d7120000-0000-4000-8000-000000000006","floor":7}"#

    /// Floors 6 to 8, names like "Room %", ordered by wing (undefined first) and then by seats, descending; the
    /// first skipped, two taken. Matching: 7.12 (north), 6.01 (south), 8.30 (no wing); ordered 8.30, 7.12, 6.01;
    /// after skip and take 7.12 and 6.01.
    static let jsObjectFilter =
        #"{"conditions":{"and":[["floor",[4,6,8]],["name",[6,"Room %"]]]},"orderByProperties":[["wing","Asc"],["seats","Desc"]],"skip":1,"take":2}"#
    /// The same filter as our encoder writes it (take before skip): the protocol fixes no member order here, and
    /// either order parses to the same filter on both sides.
    static let ourObjectFilter =
        #"{"conditions":{"and":[["floor",[4,6,8]],["name",[6,"Room %"]]]},"orderByProperties":[["wing","Asc"],["seats","Desc"]],"take":2,"skip":1}"#
    static let swiftObjectFilter = ObjectFilter(
        .and([ObjectFilterCondition("floor", .between(6, 8)), ObjectFilterCondition("name", .like("Room %"))]),
        orderByProperties: [ObjectFilterOrdering("wing", .ascending), ObjectFilterOrdering("seats", .descending)],
        take: 2, skip: 1)

    private static func object(_ text: String) throws -> CoatyObject {
        try CoatyObject(validating: JSONValue(parsing: text))
    }

    private static func text(_ message: MQTTMessage) -> String {
        String(decoding: message.payload, as: UTF8.self)
    }

    private static func agent(_ name: String, _ broker: TestBroker) -> CommunicationManager {
        CommunicationManager(
            identity: Identity(name: name),
            options: CommunicationOptions(
                port: broker.port,
                reconnect: MQTTReconnectPolicy(minimumDelay: .milliseconds(50), maximumDelay: .milliseconds(200))))
    }

    private static func online(_ managers: CommunicationManager...) async throws {
        for manager in managers { manager.start() }
        for manager in managers { try await brokerSync(manager) }
    }

    @Test func aCoatyJSQueryWithAnObjectFilterIsRetrievedAsCoatyJSExpects() async throws {
        let broker = try await TestBroker.started()
        let responder = Self.agent("rooms", broker)
        let stored = try (Self.rooms + [Self.desk]).map(Self.object)
        let queries = responder.observeQuery()
        let received = Mutex<[QueryEvent]>([])
        let answering = Task {
            for await request in queries {
                received.withLock { $0.append(request.event) }
                let candidates = stored.filter { request.event.matches($0) }
                try? await request.respond(
                    RetrieveEvent(objects: ObjectMatcher.select(candidates, filter: request.event.objectFilter)))
            }
        }
        try await Self.online(responder)
        let correlationId = "0b6f5f8e-7c0d-4f9e-b1a4-6a2d3c4e5f60"
        let peer = try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/-/RTV/+/\(correlationId)"])

        try peer.publish(
            "coaty/3/-/QRY/\(Self.jsAgent)/\(correlationId)",
            #"{"objectTypes":["com.example.Room"],"objectFilter":\#(Self.jsObjectFilter)}"#)
        let retrieve = try await peer.nextMessage()
        // The responder's identity in level 5, the request's correlation id in level 6, the objects as they were
        // received, in the filter's order.
        #expect(retrieve.topic == "coaty/3/-/RTV/\(responder.identity.objectId)/\(correlationId)")
        #expect(Self.text(retrieve) == #"{"objects":[\#(Self.rooms[0]),\#(Self.rooms[1])]}"#)
        #expect(!retrieve.retain)
        #expect(
            received.withLock { $0 } == [
                QueryEvent(objectTypes: ["com.example.Room"], objectFilter: Self.swiftObjectFilter)
            ])

        // Without a filter (`{}`, as Coaty JS sends it): every object of the queried type, in stored order.
        let unfiltered = "7c1f3a9e-2b4d-4e6f-8a0b-1c2d3e4f5a6b"
        try await peer.subscribe(["coaty/3/-/RTV/+/\(unfiltered)"])
        try peer.publish(
            "coaty/3/-/QRY/\(Self.jsAgent)/\(unfiltered)", #"{"objectTypes":["com.example.Room"],"objectFilter":{}}"#)
        let everything = try await peer.nextMessage()
        #expect(Self.text(everything) == #"{"objects":[\#(Self.rooms.joined(separator: ","))]}"#)

        answering.cancel()
        await responder.stop()
        _ = try await peer.disconnect()
        try await broker.stop()
    }

    @Test func ourQueryIsWhatCoatyJSParsesAndItsRetrievesAreChecked() async throws {
        let broker = try await TestBroker.started()
        let requester = Self.agent("requester", broker)
        let peer = try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/-/QRY/+/+"])
        try await Self.online(requester)

        let retrieves = Recorder(
            requester.publishQuery(
                QueryEvent(objectTypes: ["com.example.Room"], objectFilter: Self.swiftObjectFilter),
                timeout: .seconds(30)))
        let query = try await peer.nextMessage()
        let levels = query.topic.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        #expect(levels.count == 6)
        #expect(levels.prefix(5) == ["coaty", "3", "-", "QRY", requester.identity.objectId])
        let correlationId = levels.last ?? ""
        #expect(CoatyUUID.isVersion4(correlationId))
        // Exactly one of objectTypes and coreTypes, operators as numbers, as Coaty JS's QueryEventData reads them.
        #expect(Self.text(query) == #"{"objectTypes":["com.example.Room"],"objectFilter":\#(Self.ourObjectFilter)}"#)
        #expect(
            try ObjectFilter(json: JSONValue(parsing: Self.ourObjectFilter))
                == ObjectFilter(json: JSONValue(parsing: Self.jsObjectFilter)))

        // Coaty JS answers; a Retrieve with an object of another type fails the query's check and is dropped.
        try peer.publish(
            "coaty/3/-/RTV/\(Self.jsAgent)/\(correlationId)", #"{"objects":[\#(Self.rooms[0]),\#(Self.desk)]}"#)
        try peer.publish(
            "coaty/3/-/RTV/\(Self.jsAgent)/\(correlationId)", #"{"objects":[\#(Self.rooms[0]),\#(Self.rooms[1])]}"#)
        try peer.publish("coaty/3/-/RTV/\(Self.jsAgent)/\(correlationId)", #"{"objects":[]}"#)
        let answers = try await retrieves.wait(count: 2)
        #expect(answers.map(\.sourceId) == [Self.jsAgent, Self.jsAgent])
        #expect(answers[0].event.objects == [try Self.object(Self.rooms[0]), try Self.object(Self.rooms[1])])
        #expect(answers[1].event.objects.isEmpty)
        try await poll { requester.statistics.responsesRejected == 1 }

        // A query without a filter still carries `{}`: Coaty JS 2.4.1 reads objectFilter.skip without a guard.
        // (Iterating the responses publishes the request.)
        let unfiltered = Recorder(requester.publishQuery(QueryEvent(coreTypes: [.coatyObject]), timeout: .seconds(30)))
        #expect(Self.text(try await peer.nextMessage()) == #"{"coreTypes":["CoatyObject"],"objectFilter":{}}"#)

        unfiltered.cancel()
        retrieves.cancel()
        await requester.stop()
        _ = try await peer.disconnect()
        try await broker.stop()
    }

    /// Three callees: a room on floor 7 without a wing, a room on floor 10 in the north wing whose location has a
    /// member with a dot in its name, and one that observes without a context. Coaty JS's Calls reach them by the protocol's table (4.7), and each answer is a Return
    /// frame as Coaty JS reads it.
    @Test func coatyJSCallsReachTheCalleesTheirContextFilterMatches() async throws {
        let broker = try await TestBroker.started()
        var floor7 = CoatyObject(coreType: .coatyObject, objectType: "com.example.Room", name: "Room 7.12")
        floor7["floor"] = 7
        var floor10 = CoatyObject(coreType: .coatyObject, objectType: "com.example.Room", name: "Room 10.01")
        floor10["floor"] = 10
        floor10["wing"] = "north"
        floor10["location"] = ["building.name": "B1"]
        let callees = [("floor 7", floor7 as CoatyObject?), ("floor 10", floor10), ("any room", nil)].map {
            name, context in
            (manager: Self.agent(name, broker), context: context)
        }
        let answering = try callees.map { callee in
            let calls = try callee.manager.observeCall(operation: Self.operation, context: callee.context)
            return Task {
                for await call in calls {
                    guard let on = call.event.parameter(named: "on")?.boolValue else {
                        try? await call.respond(ReturnEvent(ReturnEvent.invalidParameters))
                        continue
                    }
                    try? await call.respond(ReturnEvent(.result(["on": .bool(on)]), executionInfo: ["duration": 12]))
                }
            }
        }
        try await Self.online(callees[0].manager, callees[1].manager, callees[2].manager)
        let peer = try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/-/RTN/+/+"])

        let calls: [(correlationId: String, payload: String)] = [
            // The protocol reference's example (1.10): floors 6 to 8.
            (
                "c0000001-0000-4000-8000-000000000001",
                #"{"parameters":{"on":true},"filter":{"conditions":["floor",[4,6,8]]}}"#
            ),
            // No filter: not for observers with a context (Coaty 2.0.0).
            ("c0000002-0000-4000-8000-000000000002", #"{"parameters":{"on":false}}"#),
            // Floor 10, or no wing at all (NotExists is the one operator an undefined property satisfies); bad parameters.
            (
                "c0000003-0000-4000-8000-000000000003",
                #"{"parameters":{"color":"black"},"filter":{"conditions":{"or":[["floor",[7,10]],["wing",[10]]]}}}"#
            ),
            // The wing equals "north" (an undefined wing fails it) and the floor is above 9; parameters as an array
            // have no "on": invalid.
            (
                "c0000004-0000-4000-8000-000000000004",
                #"{"parameters":[true],"filter":{"conditions":{"and":[["wing",[7,"north"]],["floor",[2,9]]]}}}"#
            ),
            // A property path as an array of names reaches a member whose name has a dot ...
            (
                "c0000005-0000-4000-8000-000000000005",
                #"{"parameters":{"on":true},"filter":{"conditions":[["location","building.name"],[7,"B1"]]}}"#
            ),
            // ... which the dot path does not: its property is undefined, and Equals fails.
            (
                "c0000006-0000-4000-8000-000000000006",
                #"{"parameters":{"on":true},"filter":{"conditions":["location.building.name",[7,"B1"]]}}"#
            ),
            // Last, for every callee: each answers its calls in order, so its answer to this one comes after the others.
            (
                "c0000007-0000-4000-8000-000000000007",
                #"{"parameters":{"on":true},"filter":{"conditions":["floor",[9]]}}"#
            ),
        ]
        for call in calls {
            try peer.publish("coaty/3/-/CLL:\(Self.operation)/\(Self.jsAgent)/\(call.correlationId)", call.payload)
        }
        var returns: [(correlationId: String, callee: String, payload: String)] = []
        let probe = calls.count - 1
        while returns.filter({ $0.correlationId == calls[probe].correlationId }).count < callees.count {
            let message = try await peer.nextMessage()
            let levels = message.topic.split(separator: "/").map(String.init)
            guard levels.count == 6, levels.prefix(4) == ["coaty", "3", "-", "RTN"] else {
                Issue.record("not a Return topic: \(message.topic)")
                continue
            }
            let callee = callees.firstIndex { $0.manager.identity.objectId == levels[4] }.map {
                callees[$0].manager.identity.name
            }
            returns.append((levels.last ?? "", callee ?? levels[4], Self.text(message)))
        }
        let switchedOn = #"{"result":{"on":true},"executionInfo":{"duration":12}}"#
        let invalid = #"{"error":{"code":-32602,"message":"Invalid params"}}"#
        func answers(_ index: Int) -> [String: String] {
            Dictionary(
                returns.filter { $0.correlationId == calls[index].correlationId }.map { ($0.callee, $0.payload) },
                uniquingKeysWith: { first, second in first + " and " + second })
        }
        #expect(answers(0) == ["floor 7": switchedOn, "any room": switchedOn])
        #expect(answers(1) == ["any room": #"{"result":{"on":false},"executionInfo":{"duration":12}}"#])
        #expect(answers(2) == ["floor 7": invalid, "floor 10": invalid, "any room": invalid])
        #expect(answers(3) == ["floor 10": invalid, "any room": invalid])
        #expect(answers(4) == ["floor 10": switchedOn, "any room": switchedOn])
        #expect(answers(5) == ["any room": switchedOn])
        #expect(answers(6) == ["floor 7": switchedOn, "floor 10": switchedOn, "any room": switchedOn])
        #expect(returns.count == 14)

        for task in answering { task.cancel() }
        for callee in callees { await callee.manager.stop() }
        _ = try await peer.disconnect()
        try await broker.stop()
    }

    @Test func ourCallIsWhatCoatyJSParsesAndItsReturnsArrive() async throws {
        let broker = try await TestBroker.started()
        let caller = Self.agent("caller", broker)
        let peer = try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/-/CLL:\(Self.operation)/+/+"])
        try await Self.online(caller)

        let filter = ContextFilter(
            .and([
                ObjectFilterCondition("floor", .between(6, 8)), ObjectFilterCondition("wing", .in(["north", "south"])),
            ]))
        let returns = Recorder(
            try caller.publishCall(
                CallEvent(operation: Self.operation, parameters: ["on": true], filter: filter), timeout: .seconds(30)))
        let call = try await peer.nextMessage()
        let levels = call.topic.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        #expect(levels.prefix(5) == ["coaty", "3", "-", "CLL:\(Self.operation)", caller.identity.objectId])
        let correlationId = levels.count == 6 ? levels[5] : ""
        #expect(CoatyUUID.isVersion4(correlationId))
        #expect(
            Self.text(call)
                == #"{"parameters":{"on":true},"filter":{"conditions":{"and":[["floor",[4,6,8]],["wing",[13,["north","south"]]]]}}}"#
        )

        // Coaty JS's answers: a result with execution info, the predefined error, and null, which is a result too.
        for payload in [
            #"{"result":{"on":true},"executionInfo":{"duration":4711}}"#,
            #"{"error":{"code":-32602,"message":"Invalid params"}}"#,
            #"{"result":null}"#,
        ] {
            try peer.publish("coaty/3/-/RTN/\(Self.jsAgent)/\(correlationId)", payload)
        }
        let received = try await returns.wait(count: 3)
        #expect(received.map(\.sourceId) == Array(repeating: Self.jsAgent, count: 3))
        #expect(
            received.map(\.event) == [
                ReturnEvent(.result(["on": true]), executionInfo: ["duration": 4711]),
                ReturnEvent(ReturnEvent.invalidParameters),
                ReturnEvent(.result(.null)),
            ])

        // A Call without parameters or filter is `{}`.
        let bare = Recorder(try caller.publishCall(CallEvent(operation: Self.operation), timeout: .seconds(30)))
        #expect(Self.text(try await peer.nextMessage()) == "{}")

        bare.cancel()
        returns.cancel()
        await caller.stop()
        _ = try await peer.disconnect()
        try await broker.stop()
    }
}
