import CoatyCommunication
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Synchronization
import Testing

/// The manager's MQTT session as the broker sees it (mosquitto logs every packet): client id, will, join order,
/// and the subscriptions of requests and observations.
@Suite struct SessionWireTests {
    /// The transports a manager made, so that a test can cut the connection as a dying process would.
    final class Transports: Sendable {
        let made = Mutex<[MosquittoTransport]>([])

        func make() throws(MQTTError) -> any MQTTTransport {
            let transport = try MosquittoTransport()
            made.withLock { $0.append(transport) }
            return transport
        }
    }

    /// `Coaty` and 18 hex digits of the identity, MQTT 3.1.1, clean session, keepalive 60 s, and the Deadvertise
    /// of the identity and IO node as will; subscriptions, then Identity and IoNode advertisements, then what was
    /// published before start. Cut off without DISCONNECT, the agent leaves through its will.
    @Test func clientIdWillAndJoinOrderAsCoatyJSAndTheWillOnADeadConnection() async throws {
        let broker = try await TestBroker.started()
        let transports = Transports()
        let identity = Identity(objectId: "5f0c1a52-3f4b-4d7e-9a51-2c0e8b7d9a10", name: "Swift Agent")
        let agent = CommunicationManager(
            identity: identity, options: CommunicationOptions(port: broker.port),
            ioNodes: [IoNodeDefinition(contextName: "ctx", ioSources: [IoSource(name: "s", valueType: "t")])],
            makeTransport: transports.make)
        #expect(agent.clientId == "Coaty5f0c1a523f4b4d7e9a")
        try await agent.publishChannel(ChannelEvent(channelId: "early", content: .objects([])))
        agent.start()
        try await poll { agent.communicationState == .online }
        try await brokerSync(agent)
        let nodeId = try #require(agent.ioNodes.first?.objectId)
        let will = #"{"objectIds":["\#(identity.objectId)","\#(nodeId)"]}"#

        let log = broker.logText
        #expect(log.contains(" as Coaty5f0c1a523f4b4d7e9a (p2, c1, k60).\n"))
        #expect(log.contains("Will message specified (\(will.utf8.count) bytes) (r0, q0).\n"))
        #expect(log.contains("\tcoaty/3/-/DAD/\(identity.objectId)\n"))
        let lines = log.split(separator: "\n")
        func firstLine(_ text: String) throws -> Int {
            try #require(lines.firstIndex { $0.hasSuffix(text) || $0.contains(text + "'") }, "no log line \(text)")
        }
        let received = "Received PUBLISH from Coaty5f0c1a523f4b4d7e9a (d0, q0, r0, m0, "
        let advertiseIdentity = try firstLine(received + "'coaty/3/-/ADV:Identity/\(identity.objectId)")
        let advertiseNode = try firstLine(received + "'coaty/3/-/ADV:IoNode/\(identity.objectId)")
        let early = try firstLine(received + "'coaty/3/-/CHN:early/\(identity.objectId)")
        for filter in ["coaty/3/-/ASC:ctx/+", "coaty/3/-/DSC/+/+"] {
            #expect(try firstLine("Coaty5f0c1a523f4b4d7e9a 0 \(filter)") < advertiseIdentity)
        }
        #expect(advertiseIdentity < advertiseNode)
        #expect(advertiseNode < early)

        let watcher = try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/-/DAD/+"])
        let transport = try #require(transports.made.withLock { $0.first })
        await transport.disconnect(.abrupt)
        #expect(
            try await watcher.nextMessage()
                == MQTTMessage(topic: "coaty/3/-/DAD/\(identity.objectId)", payload: Array(will.utf8), retain: false))
        await agent.stop()
        _ = try await watcher.disconnect()
        try await broker.stop()
    }

    /// Nothing follows the Deadvertise: neither publications made while the agent stops nor its answers to Discovers
    /// that keep arriving (an agent once answered its own start-up Discover after its Deadvertise, in about one of
    /// 100 stops). Agents stopped one after another while a task of each publishes Channel events and another client
    /// asks for identities without a pause: the last PUBLISH the broker receives from each is its Deadvertise.
    @Test func theDeadvertiseIsTheLastPublication() async throws {
        let broker = try await TestBroker.started()
        let asker = try await TestClient.connected(to: broker, subscribingTo: [])
        let asking = Task.detached {
            var count = 0
            while !Task.isCancelled {
                count += 1
                try? asker.publish("coaty/3/-/DSC/asker/\(count)", #"{"coreTypes":["Identity"]}"#)
                try? await Task.sleep(for: .microseconds(50))
            }
        }
        // Also when the test fails on the way: the asker would publish for the rest of the run.
        defer { asking.cancel() }
        var agents: [CommunicationManager] = []
        for round in 0..<15 {
            let agent = CommunicationManager(
                identity: Identity(name: "Leaving \(round)"), options: CommunicationOptions(port: broker.port))
            agents.append(agent)
            agent.start()
            try await poll { agent.communicationState == .online }
            let publishing = (0..<2).map { _ in
                Task.detached {
                    while !Task.isCancelled {
                        try? await agent.publishChannel(ChannelEvent(channelId: "busy", content: .objects([])))
                        await Task.yield()
                    }
                }
            }
            try await Task.sleep(for: .milliseconds(20))
            await agent.stop()
            for task in publishing {
                task.cancel()
                await task.value
            }
        }
        asking.cancel()
        await asking.value
        _ = try await asker.disconnect()
        for agent in agents {
            try await broker.waitForLog(containing: "Received DISCONNECT from \(agent.clientId)")
        }

        let log = broker.logText.split(separator: "\n")
        var answered = 0
        for agent in agents {
            let received = "Received PUBLISH from \(agent.clientId) (d0, q0, r0, m0, "
            let publications = log.filter { $0.contains(received) }
            answered += publications.filter { $0.contains("'coaty/3/-/RSV/") }.count
            let deadvertise = publications.lastIndex { $0.contains("'coaty/3/-/DAD/\(agent.identity.objectId)'") }
            #expect(deadvertise != nil, "\(agent.identity.name) did not deadvertise")
            if let deadvertise {
                let later = publications[(deadvertise + 1)...]
                #expect(
                    later.isEmpty,
                    "\(agent.identity.name): \(later.count) publications after the Deadvertise: \(later.prefix(3))")
            }
        }
        // The agents did answer while they were online: the Discovers reached them.
        #expect(answered > 0)
        try await broker.stop()
    }

    /// The correlation ids of the Discovers an agent published, in order, from the broker's log.
    func discoverCorrelationIds(of agent: CommunicationManager, in broker: TestBroker) -> [String] {
        let marker =
            "Received PUBLISH from \(agent.clientId) (d0, q0, r0, m0, 'coaty/3/-/DSC/\(agent.identity.objectId)/"
        return broker.logText.components(separatedBy: marker).dropFirst().map { String($0.prefix { $0 != "'" }) }
    }

    /// A request's responses end when the consumer stops, when the timeout passes and when the manager stops. Its
    /// response topic is subscribed before it is published (the first request's together with the spares of later
    /// ones, in one SUBSCRIBE), and the topics of ended requests are given up sixteen at a time, in one UNSUBSCRIBE
    /// after the next request's PUBLISH.
    @Test func responseStreamsEndOnCancellationTimeoutAndStopAndTopicsAreGivenUpInBatches() async throws {
        let batch = 16
        let broker = try await TestBroker.started()
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let agent = scenarios.agent("requester")
        try await scenarios.online(agent)
        let client = agent.clientId
        func count(_ text: String) -> Int { broker.logText.components(separatedBy: text).count - 1 }
        let subscribesBefore = count("Received SUBSCRIBE from \(client)\n")

        let cancelled = Recorder(agent.publishDiscover(.coreTypes([.task])))
        try await poll { discoverCorrelationIds(of: agent, in: broker).count == 1 }
        let first = discoverCorrelationIds(of: agent, in: broker)[0]
        try await broker.waitForLog(containing: "\(client) 0 coaty/3/-/RSV/+/\(first)\n")
        // The broker logs one client's packets in order: earlier ones (the scenario's sync) are counted by now.
        let unsubscribesBefore = count("Received UNSUBSCRIBE from \(client)\n")
        cancelled.cancel()
        try await cancelled.waitFinished()

        let timed = Recorder(agent.publishDiscover(.coreTypes([.task]), timeout: .milliseconds(300)))
        try await timed.waitFinished()
        #expect(timed.elements.isEmpty)
        for _ in 0..<(batch - 2) {
            try await Recorder(agent.publishDiscover(.coreTypes([.task]), timeout: .milliseconds(20))).waitFinished()
        }
        try await poll { discoverCorrelationIds(of: agent, in: broker).count == batch }
        let ended = discoverCorrelationIds(of: agent, in: broker)
        #expect(Set(ended).count == batch)
        // A batch has ended; it waits for the next request.
        let open = Recorder(agent.publishDiscover(.coreTypes([.task])))
        try await poll { discoverCorrelationIds(of: agent, in: broker).count == batch + 1 }
        for correlationId in ended {
            try await broker.waitForLog(containing: "\(client) coaty/3/-/RSV/+/\(correlationId)\n")
        }
        #expect(count("Received UNSUBSCRIBE from \(client)\n") == unsubscribesBefore + 1)
        // The spares' refill goes out with it.
        #expect(count("Received SUBSCRIBE from \(client)\n") == subscribesBefore + 2)
        for correlationId in ended {
            #expect(count("\(client) 0 coaty/3/-/RSV/+/\(correlationId)\n") == 1)
        }
        let log = broker.logText
        let openCorrelationId = discoverCorrelationIds(of: agent, in: broker)[batch]
        let openPublished = try #require(log.range(of: "DSC/\(agent.identity.objectId)/\(openCorrelationId)'"))
        let givenUp = try #require(log.range(of: "Received UNSUBSCRIBE from \(client)\n", options: .backwards))
        #expect(openPublished.lowerBound < givenUp.lowerBound)

        await agent.stop()
        try await open.waitFinished()
        try await broker.stop()
    }

    /// Response topics subscribed ahead are renewed with every reconnect: a Call made after the broker came back
    /// takes one and gets its Return. Many calls in a row cost a SUBSCRIBE and an UNSUBSCRIBE per sixteen calls.
    @Test func callsAfterAReconnectUseTheRenewedResponseTopics() async throws {
        let broker = try await TestBroker.started()
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let requester = scenarios.agent("requester")
        let responder = scenarios.agent("responder")
        let calls = try responder.observeCall(operation: "echo")
        let answering = Task {
            for await call in calls {
                try? await call.respond(ReturnEvent(.result(call.event.parameters ?? .null)))
            }
        }
        try await scenarios.online(requester, responder)
        func call(_ index: Int) async throws -> JSONValue? {
            for await response in try requester.publishCall(
                CallEvent(operation: "echo", parameters: ["index": .number(Double(index))]), timeout: .seconds(20))
            {
                guard case .result(let value) = response.event.outcome else { return nil }
                return value
            }
            return nil
        }
        #expect(try await call(0) == ["index": 0])
        let client = requester.clientId
        func count(_ text: String) -> Int { broker.logText.components(separatedBy: text).count - 1 }
        let subscribes = count("Received SUBSCRIBE from \(client)\n")
        let unsubscribes = count("Received UNSUBSCRIBE from \(client)\n")
        for index in 1...32 {
            #expect(try await call(index) == ["index": .number(Double(index))])
        }
        // Per call before: one of each.
        #expect(count("Received SUBSCRIBE from \(client)\n") - subscribes <= 5)
        #expect(count("Received UNSUBSCRIBE from \(client)\n") - unsubscribes <= 5)

        try await broker.stop()
        try await poll { requester.communicationState != .online && responder.communicationState != .online }
        try await broker.start()
        try await poll(within: .seconds(20)) {
            requester.communicationState == .online && responder.communicationState == .online
        }
        try await brokerSync(requester)
        try await brokerSync(responder)
        for index in 100..<110 {
            #expect(try await call(index) == ["index": .number(Double(index))])
        }
        answering.cancel()
        await requester.stop()
        await responder.stop()
        try await broker.stop()
    }

    /// Coaty's rule: unsubscribing while offline deletes the subscription. One given up during an outage (a
    /// cancelled observation, an abandoned request) is not renewed on the reconnect; the others are.
    @Test func subscriptionsGivenUpWhileOfflineAreNotRenewed() async throws {
        let broker = try await TestBroker.started()
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let agent = scenarios.agent("agent")
        try await scenarios.online(agent)
        let client = agent.clientId
        let raw = Recorder(try agent.observeRaw(filter: "audit/raw"))
        let request = Recorder(agent.publishDiscover(.coreTypes([.task])))
        try await poll { discoverCorrelationIds(of: agent, in: broker).count == 1 }
        let responses = "coaty/3/-/RSV/+/\(discoverCorrelationIds(of: agent, in: broker)[0])"
        for filter in ["audit/raw", responses] {
            try await broker.waitForLog(containing: "\(client) 0 \(filter)\n")
        }

        try await broker.stop()
        try await poll { agent.communicationState != .online }
        raw.cancel()
        request.cancel()
        try await raw.waitFinished()
        try await request.waitFinished()
        try await broker.start()
        try await poll(within: .seconds(20)) { agent.communicationState == .online }
        try await brokerSync(agent)

        func subscriptions(_ filter: String) -> Int {
            broker.logText.components(separatedBy: "\(client) 0 \(filter)\n").count - 1
        }
        #expect(subscriptions("coaty/3/-/DSC/+/+") == 2)
        #expect(subscriptions("audit/raw") == 1)
        #expect(subscriptions(responses) == 1)
        await agent.stop()
        try await broker.stop()
    }

    /// An agent configured as `deploy/install.sh --tls` sets one up: an mqtts:// broker with its CA, a client
    /// certificate, and a broker login whose password is in a file. The options reach the connection.
    @Test func anAgentConfiguredForTLSAndALoginComesOnline() async throws {
        let certificates = try TestCertificates()
        let broker = try await TestBroker.started(
            TestBroker.Options(users: ["greenhouse-pi": "s3cret"], tls: certificates))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coaty-login-\(CoatyUUID.random())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let passwordFile = directory.appendingPathComponent("broker.password")
        try Data("s3cret\n".utf8).write(to: passwordFile)
        // Readable by its owner only: a password file open to others is refused.
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: passwordFile.path)
        let json = #"""
            {"communication": {
              "brokerUrl": "mqtts://127.0.0.1:\#(broker.port)", "username": "greenhouse-pi", "passwordFile": "\#(passwordFile.path)",
              "tls": {"caFile": "\#(certificates.caFile)", "certFile": "\#(certificates.clientCertFile)", "keyFile": "\#(certificates.clientKeyFile)"}
            }}
            """#
        let configuration = try Configuration.parse(Array(json.utf8), source: "agent.json")
        let agent = CommunicationManager(identity: configuration.identity, options: configuration.communication)
        let echo = Recorder(try agent.observeChannel("secure"))
        agent.start()
        try await poll { agent.communicationState == .online }
        try await brokerSync(agent)
        try await agent.publishChannel(ChannelEvent(channelId: "secure", content: .objects([])))
        try await echo.wait(count: 1)
        #expect(broker.logText.contains(" as \(agent.clientId) (p2, c1, k60, u'greenhouse-pi')."))
        await agent.stop()
        try await broker.stop()
    }
}
