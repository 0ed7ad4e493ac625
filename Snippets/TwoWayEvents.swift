// Two-way events: Discover/Resolve, Query/Retrieve with an object filter, Update/Complete and Call/Return with a
// context filter. A request returns the stream of its responses; a responder answers each request it observes.
import CoatyCommunication
import CoatyJSON
import CoatyModel

func discoverResolve(_ manager: CommunicationManager) async throws {
    // snippet.discover
    // Responder: resolves Discovers for its identity's core type with the identity.
    let discovers = manager.observeDiscover()
    Task {
        for await request in discovers where request.event.isCoreTypeCompatible(.identity) {
            try? await request.respond(ResolveEvent(object: manager.identity.object))
        }
    }
    // Requester: every agent's identity, for two seconds.
    for await resolved in manager.publishDiscover(.coreTypes([.identity]), timeout: .seconds(2)) {
        print("found \(resolved.event.object?.name ?? "?") from \(resolved.sourceId)")
    }
    // snippet.end
}

func queryRetrieve(_ manager: CommunicationManager, tasks: [CoatyObject]) async throws {
    // snippet.query
    // Responder: the stored objects of the queried types that pass the filter, ordered, skipped and taken by it.
    let queries = manager.observeQuery()
    Task {
        for await request in queries {
            let candidates = tasks.filter { request.event.matches($0) }
            let selected = ObjectMatcher.select(candidates, filter: request.event.objectFilter)
            try? await request.respond(RetrieveEvent(objects: selected))
        }
    }
    // Requester: the two most urgent pending tasks.
    let filter = ObjectFilter(
        .and([
            ObjectFilterCondition("status", .equals(.number(Double(TaskStatus.pending.rawValue)))),
            ObjectFilterCondition("urgency", .greaterThanOrEqual(2)),
        ]),
        orderByProperties: [ObjectFilterOrdering("urgency", .descending)], take: 2)
    for await retrieved in manager.publishQuery(
        QueryEvent(coreTypes: [.task], objectFilter: filter), timeout: .seconds(2))
    {
        print(retrieved.event.objects.map(\.name))
    }
    // snippet.end
}

func updateComplete(_ manager: CommunicationManager, context: IoContext) async throws {
    // snippet.update
    // Responder: accepts every Update of an IoContext and completes it with the object it keeps.
    let updates = manager.observeUpdate(coreType: .ioContext)
    Task {
        for await request in updates {
            try? await request.respond(CompleteEvent(object: request.event.object))
        }
    }
    // Requester: switches the operating state.
    var changed = context
    changed["operatingState"] = "emergency"
    for await completed in try manager.publishUpdate(UpdateEvent(object: changed.object), timeout: .seconds(2)) {
        print("completed by \(completed.sourceId): \(completed.event.object)")
    }
    // snippet.end
}

func callReturn(_ manager: CommunicationManager) async throws {
    // snippet.call
    // Callee: takes Calls whose context filter matches its context (a Call without a filter does not reach an
    // observer that has a context).
    var room = CoatyObject(coreType: .coatyObject, objectType: "com.example.Room", name: "Room 7.12")
    room["floor"] = 7
    let calls = try manager.observeCall(operation: "com.example.lights.switch", context: room)
    Task {
        for await call in calls {
            guard let on = call.event.parameter(named: "on")?.boolValue else {
                try? await call.respond(ReturnEvent(ReturnEvent.invalidParameters))
                continue
            }
            try? await call.respond(ReturnEvent(.result(["on": .bool(on)]), executionInfo: ["duration": 12]))
        }
    }
    // Caller: switches on the lights on floors 6 to 8.
    let call = CallEvent(
        operation: "com.example.lights.switch", parameters: ["on": true], filter: ContextFilter("floor", .between(6, 8))
    )
    for await returned in try manager.publishCall(call, timeout: .seconds(2)) {
        switch returned.event.outcome {
        case .result(let result): print("\(returned.sourceId): \(result)")
        case .error(let code, let message): print("\(returned.sourceId) failed: \(code) \(message)")
        }
    }
    // snippet.end
}

let manager = CommunicationManager(identity: Identity(name: "Two-way"), options: CommunicationOptions())
manager.start()
try await discoverResolve(manager)
try await queryRetrieve(manager, tasks: [])
try await updateComplete(manager, context: IoContext(name: "TemperatureMeasurement"))
try await callReturn(manager)
await manager.stop()
