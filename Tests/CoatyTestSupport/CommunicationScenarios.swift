import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyModel
import Testing

/// Returns once the broker has applied every subscription the manager made so far: the broker handles a
/// connection's packets in order, so the echo of a publication made now comes after them.
public func brokerSync(_ manager: CommunicationManager) async throws {
    let channel = "sync-" + CoatyUUID.random()
    let echo = Recorder(try manager.observeChannel(channel))
    try await poll { manager.communicationState == .online }
    // The observation's own SUBSCRIBE may still be on its way: publish until the echo arrives.
    try await poll(within: .seconds(10), "the echo of a sync publication") {
        if echo.elements.isEmpty {
            Task { try? await manager.publishChannel(ChannelEvent(channelId: channel, content: .objects([]))) }
        }
        return !echo.elements.isEmpty
    }
    echo.cancel()
}

/// Every event pattern between two agents on separate connections, over any transport: the in-memory broker for
/// quick logic checks, a real mosquitto in the integration suite.
public struct CommunicationScenarios: Sendable {
    public let makeTransport: @Sendable () throws(MQTTError) -> any MQTTTransport
    public let port: Int

    public init(port: Int = 1883, makeTransport: @escaping @Sendable () throws(MQTTError) -> any MQTTTransport) {
        self.port = port
        self.makeTransport = makeTransport
    }

    public func agent(_ name: String, namespace: String = "-", crossNamespacing: Bool = false) -> CommunicationManager {
        CommunicationManager(
            identity: Identity(name: name),
            options: CommunicationOptions(
                port: port,
                reconnect: MQTTReconnectPolicy(minimumDelay: .milliseconds(50), maximumDelay: .milliseconds(200)),
                namespace: namespace, shouldEnableCrossNamespacing: crossNamespacing),
            makeTransport: makeTransport)
    }

    /// Starts the managers and returns once each is online and the broker has applied its subscriptions: being
    /// online alone does not order them before another connection's publications.
    public func online(_ managers: CommunicationManager...) async throws {
        for manager in managers { manager.start() }
        try await poll { managers.allSatisfy { $0.communicationState == .online } }
        for manager in managers { try await brokerSync(manager) }
    }

    public func stop(_ managers: CommunicationManager...) async {
        for manager in managers { await manager.stop() }
    }

    /// Advertise (core and object type), Deadvertise and Channel, with echo delivery to the publisher.
    public func oneWayEvents() async throws {
        let publisher = agent("publisher")
        let observer = agent("observer")
        let byCore = Recorder(observer.observeAdvertise(coreType: .coatyObject))
        let byType = Recorder(try observer.observeAdvertise(objectType: "com.example.Thermostat"))
        let deadvertised = Recorder(observer.observeDeadvertise())
        let channel = Recorder(try observer.observeChannel("foo_bar-baz"))
        let echo = Recorder(try publisher.observeChannel("foo_bar-baz"))
        try await online(publisher, observer)

        var thermostat = CoatyObject(coreType: .coatyObject, objectType: "com.example.Thermostat", name: "Hall")
        thermostat["setpoint"] = 21.5
        try await publisher.publishAdvertise(AdvertiseEvent(object: thermostat, privateData: ["note": "first"]))
        try await byCore.wait(count: 1)
        try await byType.wait(count: 1)
        #expect(byType.elements.first?.event.object == thermostat)
        #expect(byType.elements.first?.event.privateData?["note"] == "first")
        #expect(byType.elements.first?.sourceId == publisher.identity.objectId)

        await #expect(throws: CoatyError.self) {
            try await publisher.publishChannel(ChannelEvent(channelId: "foo+/", content: .objects([])))
        }
        for index in 0..<4 {
            var object = CoatyObject(coreType: .coatyObject, name: "item")
            object["index"] = .number(Double(index))
            try await publisher.publishChannel(ChannelEvent(channelId: "foo_bar-baz", content: .object(object)))
        }
        try await channel.wait(count: 4)
        #expect(channel.elements.map { $0.event.objects.first?["index"] } == [0, 1, 2, 3])
        try await echo.wait(count: 4)

        await publisher.publishDeadvertise(DeadvertiseEvent(objectIds: [thermostat.objectId]))
        try await deadvertised.wait(count: 1)
        #expect(deadvertised.elements.first?.event.objectIds == [thermostat.objectId])
        await stop(publisher, observer)
    }

    /// Discover/Resolve, Query/Retrieve and Update/Complete between two agents, with invalid responses dropped.
    public func requestResponseEvents() async throws {
        let requester = agent("requester")
        let responder = agent("responder")
        var stored: [CoatyObject] = (0..<5).map { index in
            var task = CoatyTask(name: "task \(index)", creatorId: "c", status: .pending).object
            task["priority"] = .number(Double(index))
            return task
        }
        let discovers = responder.observeDiscover()
        let queries = responder.observeQuery()
        let updates = responder.observeUpdate(coreType: .task)
        let answering = Task { [stored] in
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await request in discovers where request.event.isCoreTypeCompatible(.task) {
                        try? await request.respond(ResolveEvent(object: stored[0]))
                        // Not a Task: the requester must drop it.
                        try? await request.respond(
                            ResolveEvent(object: CoatyObject(coreType: .coatyObject, name: "wrong")))
                    }
                }
                group.addTask {
                    for await request in queries {
                        let objects = stored.filter { request.event.matches($0) }
                        try? await request.respond(
                            RetrieveEvent(objects: ObjectMatcher.select(objects, filter: request.event.objectFilter)))
                    }
                }
                group.addTask {
                    for await request in updates {
                        try? await request.respond(
                            CompleteEvent(object: request.event.object, privateData: ["accepted": true]))
                    }
                }
            }
        }
        try await online(requester, responder)

        let resolves = Recorder(requester.publishDiscover(.coreTypes([.task]), timeout: .seconds(30)))
        try await resolves.wait(count: 1)
        #expect(resolves.elements.first?.event.object == stored[0])
        try await poll { requester.statistics.responsesRejected == 1 }

        let filter = ObjectFilter(
            .condition(ObjectFilterCondition("priority", .between(1, 3))),
            orderByProperties: [ObjectFilterOrdering("priority", .descending)], take: 2)
        let retrieves = Recorder(
            requester.publishQuery(QueryEvent(coreTypes: [.task], objectFilter: filter), timeout: .seconds(30)))
        try await retrieves.wait(count: 1)
        #expect(retrieves.elements.first?.event.objects.map { $0["priority"] } == [3, 2])

        stored[1]["priority"] = 10
        let completes = Recorder(try requester.publishUpdate(UpdateEvent(object: stored[1]), timeout: .seconds(30)))
        try await completes.wait(count: 1)
        #expect(completes.elements.first?.event.object["priority"] == 10)
        #expect(completes.elements.first?.event.privateData?["accepted"] == true)
        answering.cancel()
        await stop(requester, responder)
    }

    /// Raw messages on application topics: exact topics and bytes, wildcards, retain; never Coaty events, and
    /// Coaty topics refused.
    public func rawMessages() async throws {
        let publisher = agent("publisher")
        let observer = agent("observer")
        #expect(throws: CoatyError.self) { try observer.observeRaw(filter: "coaty/#") }
        #expect(throws: CoatyError.self) { try publisher.publishRaw(topic: "coaty/foo/bar/baz", payload: [1]) }
        let exact = Recorder(try observer.observeRaw(filter: "/test/42/"))
        let everything = Recorder(try observer.observeRaw(filter: "#"))
        try await online(publisher, observer)
        for byte: UInt8 in [0, 255, 42] {
            try publisher.publishRaw(topic: "/test/42/", payload: [byte])
        }
        try await publisher.publishAdvertise(AdvertiseEvent(object: Identity().object))
        try publisher.publishRaw(topic: "plant/line1/state", payload: Array("on".utf8), retain: true)
        try await exact.wait(count: 3)
        #expect(exact.elements.map(\.payload) == [[0], [255], [42]])
        #expect(exact.elements.allSatisfy { $0.topic == "/test/42/" })
        try await everything.wait { $0.contains { $0.topic == "plant/line1/state" } }
        #expect(everything.elements.allSatisfy { !$0.topic.hasPrefix("coaty/") })
        // A retained message reaches an observer that comes later.
        let late = Recorder(try observer.observeRaw(filter: "plant/+/state"))
        try await late.wait(count: 1)
        #expect(late.elements.first?.payload == Array("on".utf8))
        await stop(publisher, observer)
    }

    /// The Call/Return matrix of Coaty JS's communication spec: the callee has the context {floor: 7}.
    public func callReturnMatrix() async throws {
        let caller = agent("caller")
        let callee = agent("callee")
        var context = CoatyObject(coreType: .coatyObject, name: "room")
        context["floor"] = 7
        let switchCalls = try callee.observeCall(operation: "coaty.test.switchLight", context: context)
        let addCalls = try callee.observeCall(operation: "coaty.test.add", context: context)
        let answering = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await call in switchCalls {
                        if call.event.parameter(named: "color") == "black" {
                            try? await call.respond(
                                ReturnEvent(ReturnEvent.invalidParameters, executionInfo: ["duration": 4711]))
                        } else {
                            let on = call.event.parameter(named: "state") == "on"
                            try? await call.respond(
                                ReturnEvent(.result(["state": on ? "on" : "off"]), executionInfo: ["duration": 4711]))
                        }
                    }
                }
                group.addTask {
                    for await call in addCalls {
                        guard let first = call.event.parameter(at: 0)?.numberValue,
                            let second = call.event.parameter(at: 1)?.numberValue
                        else {
                            try? await call.respond(ReturnEvent(ReturnEvent.invalidParameters))
                            continue
                        }
                        try? await call.respond(ReturnEvent(.result(.number(first + second))))
                    }
                }
            }
        }
        try await online(caller, callee)

        func returns(_ call: CallEvent, expecting count: Int) async throws -> [ReturnEvent] {
            let stream = Recorder(try caller.publishCall(call, timeout: .milliseconds(count == 0 ? 500 : 30_000)))
            if count == 0 {
                try await stream.waitFinished()
            } else {
                try await stream.wait(count: count)
            }
            return stream.elements.map(\.event)
        }
        let onFloors6to8 = ContextFilter("floor", .between(6, 8))
        let switched = try await returns(
            CallEvent(operation: "coaty.test.switchLight", parameters: ["state": "on"], filter: onFloors6to8),
            expecting: 1)
        #expect(switched == [ReturnEvent(.result(["state": "on"]), executionInfo: ["duration": 4711])])
        let black = try await returns(
            CallEvent(operation: "coaty.test.switchLight", parameters: ["color": "black"], filter: onFloors6to8),
            expecting: 1)
        #expect(black.first?.outcome == .error(code: -32602, message: "Invalid params"))
        #expect(
            try await returns(
                CallEvent(
                    operation: "coaty.test.switchLight", parameters: ["state": "on"],
                    filter: ContextFilter("floor", .equals(10))), expecting: 0
            ).isEmpty)
        #expect(
            try await returns(CallEvent(operation: "coaty.test.switchLight", parameters: ["state": "on"]), expecting: 0)
                .isEmpty)
        #expect(
            try await returns(
                CallEvent(operation: "coaty.test.add", parameters: [42, 43], filter: onFloors6to8), expecting: 1
            ).first?.outcome == .result(85))
        #expect(
            try await returns(
                CallEvent(operation: "coaty.test.add", parameters: [], filter: onFloors6to8), expecting: 1
            ).first?.outcome == .error(code: -32602, message: "Invalid params"))
        #expect(try await returns(CallEvent(operation: "coaty.test.unknown"), expecting: 0).isEmpty)
        answering.cancel()
        await stop(caller, callee)
    }

    /// Namespaces do not see each other; cross-namespacing sees both (core and object type Advertise).
    public func crossNamespaceIsolation() async throws {
        let first = agent("first", namespace: "my-namespace-1")
        let second = agent("second", namespace: "my-namespace-2")
        let everywhere = agent("everywhere", namespace: "my-namespace-11", crossNamespacing: true)
        let seenBySecond = Recorder(second.observeAdvertise(coreType: .coatyObject))
        let seenEverywhere = Recorder(everywhere.observeAdvertise(coreType: .coatyObject))
        let seenEverywhereByType = Recorder(try everywhere.observeAdvertise(objectType: "com.example.Type"))
        try await online(first, second, everywhere)
        try await first.publishAdvertise(
            AdvertiseEvent(object: CoatyObject(coreType: .coatyObject, objectType: "com.example.Type", name: "x")))
        try await seenEverywhere.wait(count: 1)
        try await seenEverywhereByType.wait(count: 1)
        #expect(seenEverywhere.elements.first?.namespace == "my-namespace-1")
        // Publications stay in the own namespace, so the second agent's own advertise is the only thing it sees.
        try await second.publishAdvertise(AdvertiseEvent(object: CoatyObject(coreType: .coatyObject, name: "own")))
        try await seenBySecond.wait(count: 1)
        try await seenEverywhere.wait(count: 2)
        #expect(seenBySecond.elements.map(\.event.object.name) == ["own"])
        await stop(first, second, everywhere)
    }

    /// Channel pings answered, and the answers awaited, by tasks on the managers' connection executors: every
    /// answer arrives, in order, while connected; and again after a stop and start (the jobs run elsewhere while
    /// the manager is stopped, and on the new connection's thread after it).
    public func observersOnTheConnectionExecutor() async throws {
        let asker = agent("asker")
        let answerer = agent("answerer")
        let answers = try asker.observeChannel("pong")
        let pings = try answerer.observeChannel("ping")
        let responder = Task(executorPreference: answerer.connectionExecutor) {
            for await ping in pings {
                try await answerer.publishChannel(ChannelEvent(channelId: "pong", content: ping.event.content))
            }
        }
        defer { responder.cancel() }
        try await online(asker, answerer)

        func roundTrips(_ range: Range<Int>, answers: ObservationStream<ReceivedEvent<ChannelEvent>>) async throws
            -> [String]
        {
            try await withTaskExecutorPreference(asker.connectionExecutor) {
                var iterator = answers.makeAsyncIterator()
                var names: [String] = []
                for index in range {
                    let ping = CoatyObject(coreType: .coatyObject, name: "ping \(index)")
                    try await asker.publishChannel(ChannelEvent(channelId: "ping", content: .object(ping)))
                    guard case .object(let answer)? = await iterator.next()?.event.content else { break }
                    names.append(answer.name)
                }
                return names
            }
        }
        #expect(try await roundTrips(0..<50, answers: answers) == (0..<50).map { "ping \($0)" })

        await asker.stop()
        // A stopped manager's executor still runs tasks, on the global executor.
        #expect(await Task(executorPreference: asker.connectionExecutor) { 42 }.value == 42)
        let restartedAnswers = try asker.observeChannel("pong")
        try await online(asker)
        #expect(try await roundTrips(50..<60, answers: restartedAnswers) == (50..<60).map { "ping \($0)" })
        await stop(asker, answerer)
    }

    /// Publications and requests made before start go out after the connection is up, after the join events.
    public func deferredPublicationsArriveAfterConnect() async throws {
        let early = agent("early")
        let observer = agent("observer")
        let seen = Recorder(try observer.observeChannel("early"))
        let identities = Recorder(observer.observeAdvertise(coreType: .identity))
        try await online(observer)
        try await early.publishChannel(ChannelEvent(channelId: "early", content: .object(early.identity.object)))
        // A Discover issued before start is deferred too, and answered by the observer and by the agent itself.
        let discover = Recorder(early.publishDiscover(.coreTypes([.identity]), timeout: .seconds(30)))
        try await online(early)
        try await seen.wait(count: 1)
        try await discover.wait(count: 2)
        #expect(Set(discover.elements.map(\.sourceId)) == [early.identity.objectId, observer.identity.objectId])
        try await identities.wait { $0.contains { $0.sourceId == early.identity.objectId } }
        await stop(early, observer)
    }
}
