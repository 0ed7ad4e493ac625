import CoatyMQTT
import MQTTTestSupport
import Testing

/// Several filters subscribed or given up at once go out in one packet, and work like the same filters one by one,
/// across a reconnect too.
@Suite struct SubscriptionBatchTests {
    @Test func subscribesAndUnsubscribesSeveralFiltersInOnePacket() async throws {
        let broker = try await TestBroker.started()
        let subscriber = try await TestClient.connected(to: broker)
        let publisher = try await TestClient.connected(to: broker)
        func count(_ text: String) -> Int { broker.logText.components(separatedBy: text).count - 1 }
        let subscribes = "Received SUBSCRIBE from \(subscriber.clientId)"
        let unsubscribes = "Received UNSUBSCRIBE from \(subscriber.clientId)"
        let subscribedBefore = count(subscribes)
        try subscriber.transport.subscribe(["batch/a", "batch/b/+", "batch/c/#", "batch/a"])
        try await subscriber.sync()
        #expect(count(subscribes) == subscribedBefore + 1)
        let log = broker.logText
        for filter in ["batch/a", "batch/b/+", "batch/c/#"] {
            #expect(log.components(separatedBy: "\(subscriber.clientId) 0 \(filter)\n").count - 1 == 1, "\(filter)")
        }
        for topic in ["batch/a", "batch/b/1", "batch/c/1/2", "batch/d"] {
            try publisher.publish(topic, topic)
        }
        #expect(try await subscriber.nextMessages(3).map(\.topic) == ["batch/a", "batch/b/1", "batch/c/1/2"])

        // Subscribed again after a reconnect, all of them.
        try await broker.stop()
        try await broker.start()
        _ = try await subscriber.events(through: .connected, timeout: .seconds(60))
        _ = try await publisher.events(through: .connected, timeout: .seconds(60))
        try await subscriber.sync()
        try publisher.publish("batch/b/2", "again")
        #expect(try await subscriber.nextMessage().topic == "batch/b/2")

        let unsubscribedBefore = count(unsubscribes)
        try subscriber.transport.unsubscribe(["batch/a", "batch/b/+", "batch/never"])
        try await subscriber.sync()
        #expect(count(unsubscribes) == unsubscribedBefore + 1)
        for topic in ["batch/a", "batch/b/3", "batch/c/end"] {
            try publisher.publish(topic, topic)
        }
        #expect(try await subscriber.nextMessage().topic == "batch/c/end")
        #expect(subscriber.pendingMessages.isEmpty)
        try await subscriber.disconnect()
        try await publisher.disconnect()
    }

    /// A bad filter in a batch is refused before anything is sent.
    @Test func refusesABatchWithAnInvalidFilter() async throws {
        let broker = try await TestBroker.started()
        let client = try await TestClient.connected(to: broker)
        #expect(throws: MQTTError.invalidTopic("bad/#/filter")) {
            try client.transport.subscribe(["good/filter", "bad/#/filter"])
        }
        try await client.sync()
        #expect(!broker.logText.contains("\(client.clientId) 0 good/filter"))
        try await client.disconnect()
    }
}
