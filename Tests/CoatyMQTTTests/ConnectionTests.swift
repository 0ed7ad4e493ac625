import CoatyMQTT
import MQTTTestSupport
import Testing

/// Connecting, the will, disconnecting and reconnecting through `MosquittoTransport` against a real mosquitto.
@Suite struct ConnectionTests {
    @Test func connectsAsMQTT311WithCleanSessionClientIdKeepaliveAndWill() async throws {
        let broker = try await TestBroker.started()
        let client = try await TestClient.connected(to: broker, clientId: "edge-agent-7") { options in
            options.keepAlive = .seconds(17)
            options.will = MQTTMessage(topic: "coaty/will/edge-agent-7", payload: Array("gone".utf8))
        }
        try await client.disconnect()

        let log = broker.logText
        #expect(log.contains(" as edge-agent-7 (p2, c1, k17)."))
        #expect(log.contains("Will message specified (4 bytes) (r0, q0).\n"))
        #expect(log.contains("\tcoaty/will/edge-agent-7\n"))
        #expect(log.contains("Client edge-agent-7 disconnected.\n"))
    }

    @Test func willIsPublishedOnAbruptDisconnect() async throws {
        let broker = try await TestBroker.started()
        let watcher = try await TestClient.connected(to: broker, subscribingTo: ["will/#"])
        let will = MQTTMessage(topic: "will/agent", payload: [0xDE, 0xAD, 0x00, 0xBE, 0xEF])
        let agent = try await TestClient.connected(to: broker) { $0.will = will }

        #expect(try await agent.disconnect(.abrupt) == [.disconnected])
        #expect(try await watcher.nextMessage() == will)
        try await watcher.disconnect()
    }

    @Test func cleanDisconnectFlushesPublishesAndDropsTheWill() async throws {
        let broker = try await TestBroker.started()
        let watcher = try await TestClient.connected(to: broker, subscribingTo: ["will/#", "data/#", "end"])
        let agent = try await TestClient.connected(to: broker, clientId: "leaving-agent") {
            $0.will = MQTTMessage(topic: "will/agent", payload: Array("gone".utf8))
        }
        for sequence in 0..<1_000 { try agent.publish("data/\(sequence)", "\(sequence)") }
        #expect(try await agent.disconnect(.clean) == [.disconnected])

        let received = try await watcher.nextMessages(1_000)
        #expect(received.map(\.topic) == (0..<1_000).map { "data/\($0)" })
        // The broker decides about the will while it handles the disconnection; a message after that tells.
        try await broker.waitForLog(containing: "Client leaving-agent disconnected.")
        let other = try await TestClient.connected(to: broker)
        try other.publish("end", "end")
        #expect(try await watcher.nextMessage().topic == "end")
        try await other.disconnect()
        try await watcher.disconnect()
    }

    /// Acknowledgements that arrive while the client disconnects must not cost the last publications: libmosquitto
    /// 2.0 closes the socket on any packet received after `mosquitto_disconnect`, dropping what is still queued.
    @Test func cleanDisconnectKeepsTheLastPublicationWhileAcknowledgementsArrive() async throws {
        let broker = try await TestBroker.started()
        let watcher = try await TestClient.connected(to: broker, subscribingTo: ["last/#"])
        for round in 0..<20 {
            let transport = try MosquittoTransport()
            let clientId = "leaving-\(round)"
            try transport.connect(broker.connectOptions(clientId: clientId), executor: nil) { _ in }
            for await event in transport.connectionEvents where event == .connected { break }
            let filters = (0..<50).map { "busy/\($0)" }
            for filter in filters { try transport.subscribe(filter) }
            for filter in filters { try transport.unsubscribe(filter) }
            try transport.publish(MQTTMessage(topic: "last/\(round)", payload: Array("bye".utf8)))
            await transport.disconnect(.clean)
            #expect(try await watcher.nextMessage().topic == "last/\(round)")
            try await broker.waitForLog(containing: "Received DISCONNECT from \(clientId)")
        }
        try await watcher.disconnect()
    }

    @Test func reconnectsAfterBrokerRestartsAndSubscribesAgain() async throws {
        let broker = try await TestBroker.started()
        let client = try await TestClient.connected(to: broker, subscribingTo: ["echo"])
        let policy = broker.connectOptions(clientId: "").reconnect

        try await broker.stop()
        let lost = try await client.events(through: .reconnecting(attempt: 1, delay: policy.minimumDelay))
        #expect(lost.count == 2)
        #expect(lost.first.map(isConnectionLost) == true)
        #expect(throws: MQTTError.notConnected) { try client.publish("echo", "while down") }

        try await broker.start()
        let recovery = try await client.events(through: .connected)
        #expect(recovery.last == .connected)
        expectBackoff(Array(recovery.dropLast()), startingAt: 2, policy: policy)
        try client.publish("echo", "back")
        #expect(try await client.nextMessage().payload == Array("back".utf8))

        // A successful connect starts the count again.
        try await broker.kill()
        #expect(try await client.events(through: .reconnecting(attempt: 1, delay: policy.minimumDelay)).count == 2)
        try await broker.start()
        _ = try await client.events(through: .connected)
        try await client.disconnect()
    }

    @Test func connectsOnceTheBrokerComesUp() async throws {
        let broker = try TestBroker()
        let client = try TestClient(broker.connectOptions(clientId: "early-bird"))
        let policy = broker.connectOptions(clientId: "").reconnect
        // Made offline; sent with the connect, ahead of anything published after `.connected`.
        try client.transport.subscribe("echo")
        let waiting = try await client.events(through: "attempt 2") { $0.attempt == 2 }
        expectBackoff(waiting, startingAt: 1, policy: policy)

        try await broker.start()
        let rest = try await client.events(through: .connected)
        expectBackoff(Array(rest.dropLast()), startingAt: 3, policy: policy)
        try client.publish("echo", "hello")
        #expect(try await client.nextMessage().payload == Array("hello".utf8))
        try await client.disconnect()
    }

    @Test func givesUpAfterMaximumAttemptsWithDoublingDelays() async throws {
        let port = try freeLoopbackPort()
        let policy = MQTTReconnectPolicy(
            minimumDelay: .milliseconds(5), maximumDelay: .milliseconds(20), maximumAttempts: 4)
        let client = try TestClient(
            MQTTConnectOptions(host: "127.0.0.1", port: port, clientId: "nobody-home", reconnect: policy))

        let events = try await client.events(through: .gaveUp(attempts: 4))
        #expect(events.last == .gaveUp(attempts: 4))
        // The system's reason for a closed port, each time.
        #expect(
            events.filter(isConnectionLost) == Array(repeating: .connectionLost(reason: "connection refused"), count: 5)
        )
        expectBackoff(Array(events.dropLast()), startingAt: 1, policy: policy)
        #expect(events.compactMap(\.attempt) == [1, 2, 3, 4])
        #expect(events.compactMap(\.delay).map { $0 <= policy.ceiling(beforeAttempt: 4) } == [true, true, true, true])
        #expect(throws: MQTTError.notConnected) { try client.publish("t", "x") }
        #expect(try await client.disconnect() == [.disconnected])
    }

    @Test func reportsRefusalsAndGivesUpAtOnceWithZeroAttempts() async throws {
        let broker = try await TestBroker.started(TestBroker.Options(users: ["alice": "s3cret"]))
        let refused = try TestClient(options(broker, username: "alice", password: "wrong"))
        #expect(
            try await refused.events(through: .gaveUp(attempts: 0)) == [
                .connectionLost(reason: "the broker refused the connection: not authorised (CONNACK 5)"),
                .gaveUp(attempts: 0),
            ])
        try await refused.disconnect()
    }

    @Test func authenticatesWithUsernameAndPassword() async throws {
        let broker = try await TestBroker.started(TestBroker.Options(users: ["alice": "s3cret", "bob": "hunter2"]))
        for (username, password) in [("alice", "wrong"), ("mallory", "s3cret"), (nil, nil)] as [(String?, String?)] {
            let client = try TestClient(options(broker, username: username, password: password))
            let events = try await client.events(through: .gaveUp(attempts: 0))
            #expect(
                events.first
                    == .connectionLost(reason: "the broker refused the connection: not authorised (CONNACK 5)"),
                "\(username ?? "anonymous")")
            try await client.disconnect()
        }

        let alice = try await TestClient.connected(to: broker, clientId: "alice-1", subscribingTo: ["news"]) {
            $0.username = "alice"
            $0.password = "s3cret"
        }
        try alice.publish("news", "signed in")
        #expect(try await alice.nextMessage().payload == Array("signed in".utf8))
        #expect(broker.logText.contains(" as alice-1 (p2, c1, k60, u'alice')."))
        try await alice.disconnect()
    }

    @Test func brokerAppliesTheACL() async throws {
        let acl = """
            user alice
            topic readwrite allowed/#
            topic readwrite \(TestClient.syncTopicFilter)
            """
        let broker = try await TestBroker.started(TestBroker.Options(users: ["alice": "s3cret"], acl: acl))
        let alice = try await TestClient.connected(to: broker, subscribingTo: ["allowed/#", "denied/#"]) {
            $0.username = "alice"
            $0.password = "s3cret"
        }
        try alice.publish("denied/1", "no")
        try alice.publish("allowed/1", "yes")
        #expect(try await alice.nextMessage().topic == "allowed/1")
        try await alice.disconnect()
    }

    @Test func rejectsUnusableOptions() throws {
        let base = MQTTConnectOptions(host: "127.0.0.1", port: 1883, clientId: "c")
        var options = base
        options.keepAlive = .seconds(0)
        #expect(throws: MQTTError.library(code: 3, message: "keepalive of 0 s is outside 5...65535 s")) {
            try MosquittoTransport().connect(options, executor: nil) { _ in }
        }
        options = base
        options.password = "secret"
        #expect(throws: MQTTError.library(code: 3, message: "MQTT 3.1.1 sends a password only with a username")) {
            try MosquittoTransport().connect(options, executor: nil) { _ in }
        }
        options = base
        options.will = MQTTMessage(topic: "will/#", payload: [])
        #expect(throws: MQTTError.invalidTopic("will/#")) {
            try MosquittoTransport().connect(options, executor: nil) { _ in }
        }
        options = base
        options.tls = MQTTTLSOptions(caFile: "/nonexistent/ca.crt")
        #expect {
            try MosquittoTransport().connect(options, executor: nil) { _ in }
        } throws: { error in
            guard case .tls(let message) = error as? MQTTError else { return false }
            return message.contains("/nonexistent/ca.crt")
        }
    }

    @Test func disconnectWithoutConnectEndsTheEvents() async throws {
        let transport = try MosquittoTransport()
        await transport.disconnect(.clean)
        await transport.disconnect(.abrupt)
        var events: [MQTTConnectionEvent] = []
        for await event in transport.connectionEvents { events.append(event) }
        #expect(events == [.disconnected])
    }

    @Test func concurrentDisconnectsEndTheEventsOnce() async throws {
        let broker = try await TestBroker.started()
        let transport = try MosquittoTransport()
        try transport.connect(broker.connectOptions(clientId: "twice"), executor: nil) { _ in }
        var events: [MQTTConnectionEvent] = []
        for await event in transport.connectionEvents {
            events.append(event)
            if event == .connected {
                async let clean: Void = transport.disconnect(.clean)
                async let abrupt: Void = transport.disconnect(.abrupt)
                _ = await (clean, abrupt)
            }
        }
        #expect(events == [.connected, .disconnected])
    }

    @Test func transportIsReleasedAfterDisconnect() async throws {
        let broker = try await TestBroker.started()
        weak var released: MosquittoTransport?
        do {
            let transport = try MosquittoTransport()
            released = transport
            try transport.connect(broker.connectOptions(clientId: "short-lived"), executor: nil) { _ in }
            for await event in transport.connectionEvents where event == .connected { break }
            await transport.disconnect(.clean)
        }
        #expect(released == nil)
    }

    private func options(_ broker: TestBroker, username: String?, password: String?) -> MQTTConnectOptions {
        var options = broker.connectOptions(clientId: "credentials-\(username ?? "none")")
        options.username = username
        options.password = password
        options.reconnect.maximumAttempts = 0
        return options
    }
}

/// `events` alternate `connectionLost` and `reconnecting` with consecutive attempts and delays in the policy's range.
func expectBackoff(
    _ events: [MQTTConnectionEvent], startingAt firstAttempt: Int, policy: MQTTReconnectPolicy,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    var expected: [MQTTConnectionEvent] = []
    for (index, event) in events.enumerated() {
        if index.isMultiple(of: 2) {
            expected.append(isConnectionLost(event) ? event : .connectionLost(reason: "(any)"))
        } else {
            let attempt = firstAttempt + index / 2
            let delay =
                event.delay.map { $0 >= policy.minimumDelay && $0 <= policy.ceiling(beforeAttempt: attempt) } == true
                ? event.delay ?? .zero : policy.ceiling(beforeAttempt: attempt)
            expected.append(.reconnecting(attempt: attempt, delay: delay))
        }
    }
    #expect(events == expected, sourceLocation: sourceLocation)
}

func isConnectionLost(_ event: MQTTConnectionEvent) -> Bool {
    if case .connectionLost = event { true } else { false }
}

extension MQTTConnectionEvent {
    var reason: String? { if case .connectionLost(let reason) = self { reason } else { nil } }
    var attempt: Int? { if case .reconnecting(let attempt, _) = self { attempt } else { nil } }
    var delay: Duration? { if case .reconnecting(_, let delay) = self { delay } else { nil } }
}
