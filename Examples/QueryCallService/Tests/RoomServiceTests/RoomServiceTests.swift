import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import CoatyTesting
import RoomService
import Testing

/// The room service as another agent sees it: a client agent queries and calls it over a broker.
@Suite struct RoomServiceTests {
    static let rooms = [
        RoomController.room(name: "Kitchen", floor: 0, targetCelsius: 21),
        RoomController.room(name: "Office", floor: 1, targetCelsius: 20),
        RoomController.room(name: "Attic", floor: 2, targetCelsius: 16),
    ]

    /// The service and a client agent, both online.
    static func agents(
        communication: CommunicationOptions = CommunicationOptions(),
        makeTransport: @escaping @Sendable () throws(MQTTError) -> any MQTTTransport
    ) async throws -> (service: Container, client: Container) {
        let service = try await Container.resolve(
            configuration: Configuration(identity: Identity(name: "room-service"), communication: communication),
            controllers: [("Rooms", RoomController(rooms: rooms))], makeTransport: makeTransport)
        let client = try await Container.resolve(
            configuration: Configuration(identity: Identity(name: "client"), communication: communication),
            makeTransport: makeTransport)
        service.start()
        client.start()
        try await poll {
            service.communicationManager.communicationState.isOnline
                && client.communicationManager.communicationState.isOnline
        }
        return (service, client)
    }

    /// The first response to a request, asking again while the service may still be subscribing.
    static func firstResponse<Response: Sendable>(
        _ request: () throws -> ResponseStream<Response>
    ) async throws -> ReceivedEvent<Response> {
        for _ in 1...15 {
            for try await response in try request() { return response }
        }
        throw TimeoutError(what: "a response")
    }

    /// Rooms above the ground floor, warmest target first, over a real mosquitto on 127.0.0.1.
    @Test func queryWithAnObjectFilterOverARealBroker() async throws {
        let broker = try await TestBroker.started()
        let (service, client) = try await Self.agents(communication: CommunicationOptions(port: broker.port)) {
            () throws(MQTTError) in try MosquittoTransport()
        }
        let query = QueryEvent(
            objectTypes: [RoomController.roomType],
            objectFilter: ObjectFilter(
                .condition(ObjectFilterCondition("floor", .greaterThan(0))),
                orderByProperties: [ObjectFilterOrdering("targetCelsius", .descending)]))
        let retrieve = try await Self.firstResponse {
            client.communicationManager.publishQuery(query, timeout: .seconds(2))
        }
        #expect(retrieve.sourceId == service.identity.objectId)
        #expect(retrieve.event.objects.map(\.name) == ["Office", "Attic"])
        await client.shutdown()
        await service.shutdown()
        try await broker.stop()
    }

    /// A query for another object type gets no answer from the service.
    @Test func otherObjectTypesAreNotAnswered() async throws {
        let broker = InMemoryBroker()
        let (service, client) = try await Self.agents { broker.makeTransport() }
        // The service answers rooms (so it is subscribed) ...
        _ = try await Self.firstResponse {
            client.communicationManager.publishQuery(
                QueryEvent(objectTypes: [RoomController.roomType]), timeout: .seconds(2))
        }
        // ... and stays silent for anything else.
        var answers = 0
        for try await _ in client.communicationManager.publishQuery(
            QueryEvent(objectTypes: ["com.example.Door"]), timeout: .milliseconds(500))
        {
            answers += 1
        }
        #expect(answers == 0)
        await client.shutdown()
        await service.shutdown()
    }

    /// Call with named parameters: the target changes and the next Query sees it; bad parameters are refused.
    @Test func callWithParameters() async throws {
        let broker = InMemoryBroker()
        let (service, client) = try await Self.agents { broker.makeTransport() }
        let attic = Self.rooms[2]
        let call = CallEvent(
            operation: RoomController.setTargetTemperature,
            parameters: ["roomId": .string(attic.objectId), "celsius": 18.5])
        let returned = try await Self.firstResponse {
            try client.communicationManager.publishCall(call, timeout: .seconds(2))
        }
        guard case .result(let room) = returned.event.outcome else {
            Issue.record("expected a result, got \(returned.event.outcome)")
            return
        }
        #expect(room["targetCelsius"] == 18.5)

        let query = QueryEvent(
            objectTypes: [RoomController.roomType],
            objectFilter: ObjectFilter(.condition(ObjectFilterCondition("name", .equals("Attic")))))
        let retrieve = try await Self.firstResponse {
            client.communicationManager.publishQuery(query, timeout: .seconds(2))
        }
        #expect(retrieve.event.objects.map { $0["targetCelsius"] } == [18.5])

        let tooHot = CallEvent(
            operation: RoomController.setTargetTemperature,
            parameters: ["roomId": .string(attic.objectId), "celsius": 80])
        let refused = try await Self.firstResponse {
            try client.communicationManager.publishCall(tooHot, timeout: .seconds(2))
        }
        #expect(refused.event.outcome == ReturnEvent.invalidParameters)
        await client.shutdown()
        await service.shutdown()
    }
}
