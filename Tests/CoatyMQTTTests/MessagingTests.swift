import CoatyMQTT
import Dispatch
import Glibc
import MQTTTestSupport
import Testing

/// Publish and subscribe through `MosquittoTransport` against a real mosquitto.
@Suite struct MessagingTests {
    @Test func deliversExactBytes() async throws {
        let broker = try await TestBroker.started()
        let subscriber = try await TestClient.connected(to: broker, subscribingTo: ["data/#"])
        let publisher = try await TestClient.connected(to: broker)
        var generator = SystemRandomNumberGenerator()
        let sent = [
            MQTTMessage(topic: "data/binary", payload: Array(0...255) + Array((0...255).reversed())),
            MQTTMessage(topic: "data/empty", payload: []),
            MQTTMessage(topic: "data/large", payload: (0..<1_048_576).map { _ in generator.next() }),
            MQTTMessage(topic: "data/ünï/çødé", payload: Array("{\"temperature\":21.5}".utf8)),
        ]
        for message in sent { try publisher.transport.publish(message) }

        #expect(try await subscriber.nextMessages(sent.count) == sent)
        try await subscriber.disconnect()
        try await publisher.disconnect()
    }

    /// A payload over the connection's limit is reported by topic and size instead of being handed on, and the
    /// connection goes on with the next message.
    @Test func dropsPayloadsOverTheLimit() async throws {
        let broker = try await TestBroker.started()
        let subscriber = try await TestClient.connected(to: broker, subscribingTo: ["data/#"]) {
            $0.maximumInboundPayload = 1000
        }
        let publisher = try await TestClient.connected(to: broker)
        try publisher.publish("data/over", Array(repeating: 1, count: 1001))
        try publisher.publish("data/at", Array(repeating: 2, count: 1000))
        #expect(try await subscriber.nextOversized() == .oversized(topic: "data/over", size: 1001))
        #expect(
            try await subscriber.nextMessages(1) == [
                MQTTMessage(topic: "data/at", payload: Array(repeating: 2, count: 1000))
            ])
        try await subscriber.disconnect()
        try await publisher.disconnect()
    }

    /// What is published inside `publishingTogether` is held back (queued, not written) until the outermost call
    /// returns, then arrives complete and in order; so a batch of values leaves in one write(), not one each. That
    /// includes what another thread publishes meanwhile, though that thread returned long before the batch ends.
    @Test func publishingTogetherHoldsPacketsBackUntilTheOutermostCallReturns() async throws {
        let broker = try await TestBroker.started()
        let subscriber = try await TestClient.connected(to: broker, subscribingTo: ["together/#"])
        let publisher = try await TestClient.connected(to: broker)
        let heldBack = try publisher.transport.publishingTogether { () throws -> [MQTTMessage] in
            try publisher.publish("together/1", "one")
            try publisher.transport.publishingTogether { () throws in try publisher.publish("together/2", "two") }
            let other = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                try? publisher.publish("together/other", "other")
                other.signal()
            }
            other.wait()
            // Long enough for the broker to pass on anything that was sent.
            usleep(100_000)
            return subscriber.pendingMessages
        }
        #expect(heldBack == [])
        try publisher.publish("together/3", "three")
        #expect(
            try await subscriber.nextMessages(4).map(\.topic) == [
                "together/1", "together/2", "together/other", "together/3",
            ])
        try await subscriber.disconnect()
        try await publisher.disconnect()
    }

    @Test func matchesWildcards() async throws {
        let broker = try await TestBroker.started()
        let subscriber = try await TestClient.connected(
            to: broker, subscribingTo: ["sensors/+/temperature", "alarms/#", "end"])
        let publisher = try await TestClient.connected(to: broker)
        for topic in [
            "sensors/kitchen/temperature", "sensors/kitchen/humidity", "sensors/a/b/temperature", "alarms",
            "alarms/fire/3", "sensors/temperature", "end",
        ] {
            try publisher.publish(topic, topic)
        }

        let received = try await subscriber.nextMessages(4).map(\.topic)
        #expect(received == ["sensors/kitchen/temperature", "alarms", "alarms/fire/3", "end"])
        try await subscriber.disconnect()
        try await publisher.disconnect()
    }

    @Test func honoursRetain() async throws {
        let broker = try await TestBroker.started()
        let early = try await TestClient.connected(to: broker, subscribingTo: ["state/#"])
        let publisher = try await TestClient.connected(to: broker)
        try publisher.publish("state/retained", "on", retain: true)
        try publisher.publish("state/transient", "off")
        // A live subscriber gets the retain flag cleared (MQTT 3.1.1 3.3.1.3).
        #expect(try await early.nextMessages(2).map(\.retain) == [false, false])

        let late = try await TestClient.connected(to: broker, subscribingTo: ["state/#"])
        try publisher.publish("state/end", "end")
        #expect(
            try await late.nextMessages(2) == [
                MQTTMessage(topic: "state/retained", payload: Array("on".utf8), retain: true),
                MQTTMessage(topic: "state/end", payload: Array("end".utf8)),
            ])
        for client in [early, publisher, late] { try await client.disconnect() }
    }

    @Test func stopsDeliveryAfterUnsubscribe() async throws {
        let broker = try await TestBroker.started()
        let subscriber = try await TestClient.connected(to: broker, subscribingTo: ["a/#", "b"])
        let publisher = try await TestClient.connected(to: broker)
        try publisher.publish("a/1", "first")
        #expect(try await subscriber.nextMessage().topic == "a/1")

        try await subscriber.unsubscribe(["a/#"])
        try publisher.publish("a/2", "dropped")
        try publisher.publish("b", "marker")
        #expect(try await subscriber.nextMessage().topic == "b")
        try await subscriber.disconnect()
        try await publisher.disconnect()
    }

    @Test func deliversConcurrentPublishesFromManyTasks() async throws {
        let broker = try await TestBroker.started()
        let subscriber = try await TestClient.connected(to: broker, subscribingTo: ["load/#"])
        let publisher = try await TestClient.connected(to: broker)
        let tasks = 8
        let perTask = 500
        try await withThrowingTaskGroup { group in
            for task in 0..<tasks {
                group.addTask {
                    for sequence in 0..<perTask { try publisher.publish("load/\(task)", "\(sequence)") }
                }
            }
            try await group.waitForAll()
        }

        let received = try await subscriber.nextMessages(tasks * perTask)
        for task in 0..<tasks {
            let sequences = received.filter { $0.topic == "load/\(task)" }.map {
                String(decoding: $0.payload, as: UTF8.self)
            }
            #expect(sequences == (0..<perTask).map(String.init), "task \(task)")
        }
        try await subscriber.disconnect()
        try await publisher.disconnect()
    }

    static let invalidTopics = [
        "", "a/+", "a/#", "+", "#", "a/b+", "a\u{0}b", "a\u{1}b", "a\u{9F}", "\u{FFFF}",
        String(repeating: "t", count: 65_536),
    ]

    @Test func rejectsInvalidTopics() throws {
        let transport = try MosquittoTransport()
        for topic in Self.invalidTopics {
            #expect(throws: MQTTError.invalidTopic(topic)) {
                try transport.publish(MQTTMessage(topic: topic, payload: []))
            }
        }
        for filter in [
            "", "a/#/b", "a/b#", "a+/b", "+a", "##", "a\u{0}", "a/\u{7F}", String(repeating: "f", count: 65_536),
            "#/", "+#", "a/+#", "a/#+", "a/b+/c",
        ] {
            #expect(throws: MQTTError.invalidTopic(filter)) { try transport.subscribe(filter) }
            #expect(throws: MQTTError.invalidTopic(filter)) { try transport.unsubscribe(filter) }
        }
        for filter in [
            "#", "+", "a/+/b", "+/+", "a/#", "/", "a//b", "/#", "+/", "/+/", "+/#",
            String(repeating: "f", count: 65_535),
        ] {
            #expect(throws: Never.self) { try transport.subscribe(filter) }
        }
    }

    /// Connected, libmosquitto checks the topic itself; the verdict is the same, and nothing reaches the broker.
    @Test func rejectsInvalidTopicsWhileConnected() async throws {
        let broker = try await TestBroker.started()
        let subscriber = try await TestClient.connected(to: broker, subscribingTo: ["#"])
        let publisher = try await TestClient.connected(to: broker)
        for topic in Self.invalidTopics {
            #expect(throws: MQTTError.invalidTopic(topic)) {
                try publisher.transport.publish(MQTTMessage(topic: topic, payload: []))
            }
        }
        try publisher.publish("a", "end")
        #expect(try await subscriber.nextMessages(1).map(\.topic) == ["a"])
        try await subscriber.disconnect()
        try await publisher.disconnect()
    }

    @Test func publishFailsWhileNotConnected() async throws {
        let transport = try MosquittoTransport()
        #expect(throws: MQTTError.notConnected) { try transport.publish(MQTTMessage(topic: "t", payload: [1])) }

        let broker = try await TestBroker.started()
        let client = try await TestClient.connected(to: broker)
        try client.publish("t", "online")
        try await client.disconnect()
        #expect(throws: MQTTError.notConnected) { try client.publish("t", "after disconnect") }
    }
}
