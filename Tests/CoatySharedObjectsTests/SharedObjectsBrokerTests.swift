import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatySharedObjects
import CoatyTestSupport
import MQTTTestSupport
import Testing

/// Agents on separate connections to a real mosquitto, each with its own shared objects service.
final class SharedAgents: Sendable {
    let broker: TestBroker
    let scenarios: CommunicationScenarios
    private let running = Recorder<Void>(ObservationStream<Void>.finished)

    init() async throws {
        broker = try await TestBroker.started()
        scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
    }

    struct Agent: Sendable {
        let manager: CommunicationManager
        let shared: SharedObjects
        let task: Task<Void, Never>

        func stop() async {
            task.cancel()
            await task.value
            await manager.stop()
        }
    }

    func agent<C: Clock & Sendable>(_ name: String, clock: C, requestTimeout: Duration = .seconds(2)) async throws
        -> Agent
    where C.Duration == Duration {
        let manager = scenarios.agent(name)
        let shared = SharedObjects(manager: manager, clock: clock, requestTimeout: requestTimeout)
        let task = Task { await shared.run() }
        try await scenarios.online(manager)
        return Agent(manager: manager, shared: shared, task: task)
    }

    func agent(_ name: String, requestTimeout: Duration = .seconds(2)) async throws -> Agent {
        try await agent(name, clock: ContinuousClock(), requestTimeout: requestTimeout)
    }

    func stop(_ agents: Agent...) async throws {
        for agent in agents { await agent.stop() }
        try await broker.stop()
    }
}

/// The first snapshot, then the data as the events make it: what a client shows its user.
func replay(_ events: [SharedObjectEvent]) -> (data: JSONObject, version: Int)? {
    var current: (data: JSONObject, version: Int)?
    for event in events {
        switch event {
        case .snapshot(let snapshot):
            current = (snapshot.data, snapshot.version)
        case .changed(let change):
            current?.data[change.key] = change.value
            current?.version = change.version
        case .message, .unavailable, .deleted:
            break
        }
    }
    return current
}

@Suite struct SharedObjectsBrokerTests {
    @Test func connectingGetsTheSnapshotThenEveryChange() async throws {
        let agents = try await SharedAgents()
        let host = try await agents.agent("host")
        let client = try await agents.agent("client")
        try await host.shared.host(SharedObjectDefinition(name: "setpoints", data: ["fanOn": 60, "fanOff": 55]))

        let connection = try await client.shared.connect("setpoints", ifMissing: .fail)
        let events = Recorder(connection.events)
        try await events.wait(count: 1)
        guard case .snapshot(let snapshot) = events.elements.first else {
            Issue.record("first event \(String(describing: events.elements.first)) is not a snapshot")
            return
        }
        #expect(snapshot.data == ["fanOn": 60, "fanOff": 55])
        #expect(snapshot.version == 0)
        #expect(snapshot.hostId == host.manager.identity.objectId)
        #expect(connection.status == .connected)

        let change = try await connection.set("fanOn", to: 62)
        #expect(change == SharedChange(key: "fanOn", value: 62, version: 1))
        try await events.wait(count: 2)
        #expect(events.elements[1] == .changed(SharedChange(key: "fanOn", value: 62, version: 1)))
        #expect(connection.snapshot?.data["fanOn"] == 62)
        #expect(host.shared.hostedObjects.first?.data == ["fanOn": 62, "fanOff": 55])
        try await agents.stop(host, client)
    }

    @Test func concurrentSetsGetDistinctVersionsAndEveryoneEndsWithTheSameState() async throws {
        let agents = try await SharedAgents()
        let host = try await agents.agent("host")
        let first = try await agents.agent("first")
        let second = try await agents.agent("second")
        try await host.shared.host(SharedObjectDefinition(name: "modes"))
        let observer = try await host.shared.connect("modes")
        let a = try await first.shared.connect("modes")
        let b = try await second.shared.connect("modes")
        let recorders = [Recorder(observer.events), Recorder(a.events), Recorder(b.events)]

        let writes = 20
        let versions = try await withThrowingTaskGroup(of: [Int].self) { group in
            for (connection, prefix) in [(a, "a"), (b, "b")] {
                group.addTask {
                    var versions: [Int] = []
                    for index in 0..<writes {
                        versions.append(
                            try await connection.set("\(prefix)\(index % 3)", to: .number(Double(index))).version)
                        versions.append(try await connection.set("shared", to: .string("\(prefix)\(index)")).version)
                    }
                    return versions
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(Set(versions).count == 4 * writes)
        #expect(Set(versions) == Set(1...(4 * writes)))

        let final = try #require(host.shared.hostedObjects.first)
        #expect(final.version == 4 * writes)
        for recorder in recorders {
            let replayed = try await recorder.wait { replay($0)?.version == 4 * writes }
            #expect(replay(replayed)?.data == final.data)
        }
        try await agents.stop(host, first, second)
    }

    @Test func aStaleExpectedVersionIsRefusedWithItsMessage() async throws {
        let agents = try await SharedAgents()
        let host = try await agents.agent("host")
        let client = try await agents.agent("client")
        try await host.shared.host(SharedObjectDefinition(name: "calibration", data: ["offset": 0.5]))
        let connection = try await client.shared.connect("calibration")
        let accepted = try await connection.set("offset", to: -0.8, expectedVersion: 0)
        #expect(accepted.version == 1)

        let failure = await #expect(throws: SharedObjectFailure.self) {
            try await connection.set("offset", to: 1.2, expectedVersion: 0)
        }
        #expect(failure?.reason == .staleVersion)
        #expect(failure?.key == "offset")
        #expect(failure?.value == 1.2)
        #expect(failure?.message == "stale version 0 of shared object calibration; the current version is 1")
        #expect(host.shared.hostedObjects.first?.data == ["offset": -0.8])
        try await agents.stop(host, client)
    }

    @Test func deletingAKeyTellsEveryoneItWasADeletion() async throws {
        let agents = try await SharedAgents()
        let host = try await agents.agent("host")
        let author = try await agents.agent("author")
        let bystander = try await agents.agent("bystander")
        try await host.shared.host(SharedObjectDefinition(name: "setpoints", data: ["fanOn": 60, "heaterOn": 5]))
        let a = try await author.shared.connect("setpoints")
        let b = try await bystander.shared.connect("setpoints")
        let authorEvents = Recorder(a.events), bystanderEvents = Recorder(b.events)

        let deletion = try await a.delete("heaterOn")
        #expect(deletion == SharedChange(key: "heaterOn", value: nil, version: 1))
        #expect(deletion.isDeletion)
        for recorder in [authorEvents, bystanderEvents] {
            let events = try await recorder.wait(count: 2)
            #expect(events[1] == .changed(SharedChange(key: "heaterOn", value: nil, version: 1)))
        }
        #expect(b.snapshot?.data == ["fanOn": 60])

        let missing = await #expect(throws: SharedObjectFailure.self) { try await b.delete("heaterOn") }
        #expect(missing?.reason == .unknownKey)
        #expect(missing?.message == "shared object setpoints has no key heaterOn")
        try await agents.stop(host, author, bystander)
    }

    @Test func messagesReachEveryClientIncludingTheSender() async throws {
        let agents = try await SharedAgents()
        let host = try await agents.agent("host")
        let sender = try await agents.agent("sender")
        let listener = try await agents.agent("listener")
        try await host.shared.host(SharedObjectDefinition(name: "alerts"))
        let hostSide = try await host.shared.connect("alerts")
        let sending = try await sender.shared.connect("alerts")
        let listening = try await listener.shared.connect("alerts")
        let recorders = [Recorder(hostSide.events), Recorder(sending.events), Recorder(listening.events)]

        try await sending.send(["text": "door open", "level": 2])
        let expected = SharedObjectEvent.message(
            SharedMessage(message: ["text": "door open", "level": 2], senderId: sender.manager.identity.objectId))
        for recorder in recorders {
            try await recorder.wait { $0.contains(expected) }
        }
        // A message is no change.
        #expect(host.shared.hostedObjects.first?.version == 0)

        let tooLarge = await #expect(throws: SharedObjectFailure.self) {
            try await sending.send(.string(String(repeating: "x", count: 20_000)))
        }
        #expect(tooLarge?.reason == .tooLarge)
        try await agents.stop(host, sender, listener)
    }

    @Test func anObjectExpiresAfterItsInactivityAndEveryoneIsTold() async throws {
        let agents = try await SharedAgents()
        let clock = ManualClock()
        let host = try await agents.agent("host", clock: clock)
        let client = try await agents.agent("client")
        try await host.shared.host(SharedObjectDefinition(name: "session", data: ["user": "ada"], expiryMinutes: 2))
        let connection = try await client.shared.connect("session")
        let events = Recorder(connection.events)
        try await events.wait(count: 1)

        try await poll { clock.sleeperCount > 0 }
        clock.advance(by: .seconds(90))
        // Activity restarts the two minutes.
        try await connection.set("user", to: "grace")
        try await events.wait(count: 2)
        clock.advance(by: .seconds(90))
        try await Task.sleep(for: .milliseconds(200))
        #expect(connection.status == .connected)
        #expect(host.shared.hostedObjects.count == 1)

        clock.advance(by: .seconds(31))
        try await events.waitFinished()
        #expect(events.elements.last == .deleted)
        #expect(connection.status == .deleted)
        #expect(host.shared.hostedObjects.isEmpty)
        let failure = await #expect(throws: SharedObjectFailure.self) { try await connection.set("user", to: "linus") }
        #expect(failure?.reason == .deleted)
        try await agents.stop(host, client)
    }

    @Test func deletingTheObjectTellsEveryoneAndLaterOperationsFail() async throws {
        let agents = try await SharedAgents()
        let host = try await agents.agent("host")
        let deleter = try await agents.agent("deleter")
        let other = try await agents.agent("other")
        let hosted = try await host.shared.host(SharedObjectDefinition(name: "scratch", data: ["a": 1]))
        let a = try await deleter.shared.connect("scratch")
        let b = try await other.shared.connect("scratch")
        let aEvents = Recorder(a.events), bEvents = Recorder(b.events)
        // A request that still names the deleted object (from an agent that missed the deletion) is refused.
        let straggler = try await agents.agent("straggler")
        let late = try await straggler.shared.connect("scratch")

        try await a.deleteObject()
        for recorder in [aEvents, bEvents] {
            try await recorder.waitFinished()
            #expect(recorder.elements.last == .deleted)
        }
        let failure = await #expect(throws: SharedObjectFailure.self) { try await b.set("a", to: 2) }
        #expect(failure?.reason == .deleted)
        #expect(failure?.message == "shared object scratch was deleted")
        try await poll { late.status == .deleted }

        // The same name again is a new object that the old connections do not follow.
        let renewed = try await other.shared.connect("scratch", ifMissing: .create)
        let renewedSnapshot = try #require(renewed.snapshot)
        #expect(renewedSnapshot.objectId != hosted.objectId)
        #expect(renewedSnapshot.data == [:])
        #expect(renewedSnapshot.hostId == other.manager.identity.objectId)
        try await renewed.set("b", to: 3)
        try await Task.sleep(for: .milliseconds(200))
        #expect(bEvents.elements.count == 2)
        #expect(b.status == .deleted)
        try await agents.stop(host, deleter, other, straggler)
    }

    @Test func connectingToANameNobodyHostsCreatesItOrFailsOrWaits() async throws {
        let agents = try await SharedAgents()
        let first = try await agents.agent("first", requestTimeout: .milliseconds(500))
        let second = try await agents.agent("second", requestTimeout: .milliseconds(500))

        let failure = await #expect(throws: SharedObjectFailure.self) {
            try await second.shared.connect("nobody", ifMissing: .fail)
        }
        #expect(failure?.reason == .unknownObject)
        #expect(failure?.message == "no agent hosts a shared object named nobody")

        let waiting = try await second.shared.connect("later", ifMissing: .wait)
        #expect(waiting.status == .waiting)
        let waitingEvents = Recorder(waiting.events)

        let created = try await first.shared.connect("later")
        #expect(created.status == .connected)
        #expect(first.shared.hostedObjects.map(\.objectId) == [created.snapshot?.objectId])
        try await created.set("k", to: true)
        let events = try await waitingEvents.wait(count: 2)
        #expect(replay(events)?.data == ["k": true])
        #expect(waiting.status == .connected)
        try await agents.stop(first, second)
    }

    /// A host that does not answer the Discover (one that began to host after it went out) but advertises the
    /// object: the waiting connect returns once that advertisement binds it, not when its Discover times out.
    @Test func aWaitingConnectReturnsWhenAHostAdvertisesBeforeItsDiscoverEnds() async throws {
        let agents = try await SharedAgents()
        let requestTimeout = Duration.seconds(20)
        let waiter = try await agents.agent("waiter", requestTimeout: requestTimeout)
        // Its service does not run, so it answers no Discover; hosting advertises all the same.
        let hostManager = agents.scenarios.agent("host")
        let host = SharedObjects(manager: hostManager)
        let discovers = Recorder(hostManager.observeDiscover())
        try await agents.scenarios.online(hostManager)

        let connecting = Task { try await waiter.shared.connect("late", ifMissing: .wait) }
        try await discovers.wait { $0.contains { $0.event.externalId == "late" } }
        let hosted = ContinuousClock.now
        try await host.host(SharedObjectDefinition(name: "late", data: ["k": 1]))
        let connection = try await connecting.value
        let took = ContinuousClock.now - hosted
        #expect(took < requestTimeout / 2, "connect returned \(took) after the advertisement")
        #expect(connection.status == .connected)
        #expect(connection.snapshot?.data == ["k": 1])
        await hostManager.stop()
        try await agents.stop(waiter)
    }

    /// A connection that waits asks again, at growing intervals: a host whose advertisement went out before this
    /// agent was there, and whose answer to the first Discover came too late, is found all the same. The host here
    /// never advertises and answers only the second Discover.
    @Test func aWaitingConnectionAsksAgainUntilAHostAnswers() async throws {
        let agents = try await SharedAgents()
        let waiter = try await agents.agent("waiter", requestTimeout: .milliseconds(500))
        let hostManager = agents.scenarios.agent("host")
        let discovers = hostManager.observeDiscover()
        try await agents.scenarios.online(hostManager)
        let object = SharedObjectState(name: "early", hostId: hostManager.identity.objectId, data: ["k": 1]).object
        let answering = Task {
            var asked = 0
            for await request in discovers where request.event.externalId == "early" {
                asked += 1
                if asked >= 2 { try? await request.respond(ResolveEvent(object: object)) }
            }
        }
        let connecting = ContinuousClock.now
        let connection = try await waiter.shared.connect("early", ifMissing: .wait)
        #expect(connection.status == .waiting)
        try await poll(within: .seconds(20)) { connection.status == .connected }
        let took = ContinuousClock.now - connecting
        #expect(connection.snapshot?.data == ["k": 1])
        // Its own Discover ended after 500 ms; the next one goes a second later.
        #expect(took >= .milliseconds(1500), "connected \(took) after connecting")
        answering.cancel()
        await hostManager.stop()
        try await agents.stop(waiter)
    }

    @Test func aReadOnlyObjectIsChangedOnlyByItsHost() async throws {
        let agents = try await SharedAgents()
        let host = try await agents.agent("host")
        let client = try await agents.agent("client")
        try await host.shared.host(SharedObjectDefinition(name: "limits", data: ["max": 80], isReadOnly: true))
        let remote = try await client.shared.connect("limits")
        let refused = await #expect(throws: SharedObjectFailure.self) { try await remote.set("max", to: 90) }
        #expect(refused?.reason == .notAllowed)
        #expect(refused?.message == "shared object limits is read-only: only its host may change it")
        let denied = await #expect(throws: SharedObjectFailure.self) { try await remote.deleteObject() }
        #expect(denied?.reason == .notAllowed)

        let local = try await host.shared.connect("limits")
        #expect(try await local.set("max", to: 85).version == 1)
        let tooLarge = await #expect(throws: SharedObjectFailure.self) {
            try await local.set("blob", to: .string(String(repeating: "y", count: 17_000)))
        }
        #expect(tooLarge?.reason == .tooLarge)
        try await agents.stop(host, client)
    }

    /// Updates written by hand, as any agent (or a broken one) may send them: each is refused with its reason, the
    /// object is unchanged, and the host goes on serving.
    @Test func malformedRequestsAreRefusedWithAMessage() async throws {
        let agents = try await SharedAgents()
        let host = try await agents.agent("host")
        let requester = try await agents.agent("requester")
        let hosted = try await host.shared.host(SharedObjectDefinition(name: "setpoints", data: ["fanOn": 60]))

        let requests: [(JSONValue?, String)] = [
            (nil, "malformed request: $: missing required member \"request\""),
            (
                ["operation": "rename"],
                "malformed request: $.request.operation: \"rename\" is not one of \"set\", \"delete\", \"deleteObject\""
            ),
            (["operation": "set", "key": "fanOn"], "malformed request: $.request: missing required member \"value\""),
            (
                ["operation": "set", "key": "", "value": 1],
                "malformed request: $.request.key: must not be an empty string"
            ),
            (
                ["operation": "set", "key": 7, "value": 1],
                "malformed request: $.request.key: expected a string, found number"
            ),
            (
                ["operation": "delete", "key": "fanOn", "expectedVersion": -1],
                "malformed request: $.request.expectedVersion: -1 is out of range 0...9223372036854775807"
            ),
            (
                ["operation": "set", "key": "fanOn", "value": 1, "extra": true],
                "malformed request: $.request.extra: unknown member \"extra\" (known: \"expectedVersion\", \"key\", \"operation\", \"value\")"
            ),
        ]
        for (request, message) in requests {
            var object = CoatyObject(
                coreType: .coatyObject, objectType: SharedObjectWire.objectType, objectId: hosted.objectId,
                name: "setpoints")
            object.externalId = "setpoints"
            object["request"] = request
            var answer: CompleteEvent?
            for await response in try requester.manager.publishUpdate(UpdateEvent(object: object), timeout: .seconds(5))
            {
                answer = response.event
                break
            }
            #expect(answer?.privateData?["reason"] == "malformed", "\(String(describing: request))")
            #expect(answer?.privateData?["refused"]?.stringValue == message)
            #expect(answer?.object.objectId == hosted.objectId)
        }
        #expect(host.shared.hostedObjects.first?.version == 0)
        #expect(host.shared.hostedObjects.first?.data == ["fanOn": 60])
        let connection = try await requester.shared.connect("setpoints")
        #expect(try await connection.set("fanOn", to: 61).version == 1)
        try await agents.stop(host, requester)
    }

    /// The host stops (its Deadvertise names its identity; a host that dies leaves the same as its will, tested
    /// with a killed process in the command-line suite): clients are told the object is unavailable, keep its data,
    /// and get a snapshot when a host is back.
    @Test func clientsLearnWhenTheHostIsGoneAndRecoverWhenAHostIsBack() async throws {
        let agents = try await SharedAgents()
        let client = try await agents.agent("client")
        let hostIdentity = Identity(name: "host")
        let objectId = CoatyUUID.random()
        func startHost(data: JSONObject) async throws -> SharedAgents.Agent {
            let manager = CommunicationManager(
                identity: hostIdentity, options: CommunicationOptions(port: agents.broker.port))
            let shared = SharedObjects(manager: manager)
            let task = Task { await shared.run() }
            try await agents.scenarios.online(manager)
            try await shared.host(SharedObjectDefinition(name: "setpoints", objectId: objectId, data: data))
            return SharedAgents.Agent(manager: manager, shared: shared, task: task)
        }
        let host = try await startHost(data: ["fanOn": 60])
        let connection = try await client.shared.connect("setpoints", ifMissing: .fail)
        let events = Recorder(connection.events)
        try await events.wait(count: 1)

        await host.stop()
        try await events.wait { $0.contains(.unavailable) }
        #expect(connection.status == .unavailable)
        #expect(connection.snapshot?.data == ["fanOn": 60])
        let failure = await #expect(throws: SharedObjectFailure.self) { try await connection.set("fanOn", to: 61) }
        #expect(failure?.reason == .unavailable)

        let back = try await startHost(data: ["fanOn": 58])
        let recovered = try await events.wait { $0.count >= 3 }
        #expect(
            recovered.last
                == .snapshot(
                    SharedSnapshot(objectId: objectId, hostId: hostIdentity.objectId, version: 0, data: ["fanOn": 58])))
        #expect(connection.status == .connected)
        #expect(try await connection.set("fanOn", to: 59).version == 1)
        try await agents.stop(client, back)
    }

    /// An agent that comes online asks for the objects it follows; a host that begins to host only after that Discover
    /// reached it does not answer it, but its advertisement shows it is there: the connection stays connected (it
    /// was marked unavailable when the Discover's wait ended, and a controller acting on that closed what it had
    /// just opened).
    @Test func aHostHeardAfterTheDiscoverOnComingOnlineIsNotTakenForGone() async throws {
        let agents = try await SharedAgents()
        let timeout = Duration.milliseconds(600)
        let clientManager = agents.scenarios.agent("client")
        let client = SharedObjects(manager: clientManager, requestTimeout: timeout)
        let clientTask = Task { await client.run() }
        // A host that advertises the object and answers no Discover, as one whose hosting began later does.
        let host = agents.scenarios.agent("host")
        try await agents.scenarios.online(host)

        let connecting = Task { try await client.connect("setpoints", ifMissing: .wait) }
        try await agents.scenarios.online(clientManager)
        let object = SharedObjectState(
            objectId: CoatyUUID.random(), name: "setpoints", hostId: host.identity.objectId, data: ["fanOn": 60])
        try await host.publishAdvertise(AdvertiseEvent(object: object.object))
        let connection = try await connecting.value
        let events = Recorder(connection.events)
        try await events.wait(count: 1)
        #expect(connection.status == .connected)

        // Both Discovers (the connect's and the one on coming online) have ended unanswered by now.
        try await Task.sleep(for: timeout * 3)
        #expect(connection.status == .connected)
        #expect(!events.elements.contains(.unavailable))
        clientTask.cancel()
        await clientTask.value
        await clientManager.stop()
        await host.stop()
        try await agents.broker.stop()
    }
}
