import CoatyMQTT
import Testing

@testable import CoatyCommunication

@Suite struct PublicationQueueTests {
    func value(_ number: Int, bytes: Int = 1) -> QueuedPublication {
        QueuedPublication(
            message: MQTTMessage(topic: "v\(number)", payload: Array(repeating: 0, count: bytes)),
            kind: .value(sourceId: "s"))
    }

    func join(_ name: String) -> QueuedPublication {
        QueuedPublication(message: MQTTMessage(topic: name, payload: []), kind: .join)
    }

    func topics(_ publications: [QueuedPublication]) -> [String] { publications.map(\.message.topic) }

    /// Join events are outside the bound: they never give way and make nothing give way, before or after values.
    @Test func theOldestGiveWayAndJoinEventsStay() {
        var queue = PublicationQueue(limits: OfflineQueueLimits(maximumMessages: 3, maximumBytes: 1000))
        queue.prependJoin([MQTTMessage(topic: "adv", payload: [])])
        var dropped: [QueuedPublication] = []
        for number in 1...5 { dropped += queue.append(value(number)) }
        #expect(topics(dropped) == ["v1", "v2"])
        queue.prependJoin([MQTTMessage(topic: "adv", payload: []), MQTTMessage(topic: "node", payload: [])])
        #expect(queue.count == 3)
        #expect(topics(queue.removeAll()) == ["node", "adv", "v3", "v4", "v5"])
        #expect(queue.isEmpty && queue.bytes == 0)
    }

    @Test func theNewestGiveWayUnderThatPolicy() {
        var queue = PublicationQueue(
            limits: OfflineQueueLimits(maximumMessages: 2, maximumBytes: 1000, dropPolicy: .newest))
        var dropped: [QueuedPublication] = []
        for number in 1...4 { dropped += queue.append(value(number)) }
        dropped += queue.append(join("adv"))
        #expect(topics(dropped) == ["v3", "v4"])
        #expect(topics(queue.removeAll()) == ["v1", "v2", "adv"])
    }

    @Test func theByteBoundCountsTopicAndPayload() {
        var queue = PublicationQueue(limits: OfflineQueueLimits(maximumMessages: 100, maximumBytes: 30))
        var dropped: [QueuedPublication] = []
        for number in 1...4 { dropped += queue.append(value(number, bytes: 8)) }  // 10 bytes each
        #expect(topics(dropped) == ["v1"])
        #expect(queue.bytes == 30)
    }

    /// Publications put back after a failed send go in front, and the bound holds afterwards too.
    @Test func publicationsPutBackGoInFrontWithinTheBound() {
        var queue = PublicationQueue(limits: OfflineQueueLimits(maximumMessages: 3, maximumBytes: 1000))
        _ = queue.append(value(3))
        _ = queue.append(value(4))
        let dropped = queue.prepend([value(1), value(2)])
        #expect(topics(dropped) == ["v1"])
        #expect(topics(queue.removeAll()) == ["v2", "v3", "v4"])
    }

    /// Many drops of the oldest stay cheap and keep the order (the taken slots are removed in bulk).
    @Test func aLongOutageKeepsTheNewestInOrder() {
        var queue = PublicationQueue(limits: OfflineQueueLimits(maximumMessages: 100, maximumBytes: 1 << 20))
        var droppedCount = 0
        for number in 0..<10_000 { droppedCount += queue.append(value(number)).count }
        #expect(droppedCount == 9_900)
        #expect(topics(queue.removeAll()) == (9_900..<10_000).map { "v\($0)" })
    }
}
