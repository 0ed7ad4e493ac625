import CoatyCommunication
import CoatyHomeAssistant
import CoatyJSON
import Testing

/// What the feed hands the bridge: each point's latest value first, then every change, and nothing for a value that
/// equals the point's latest (a sensor reading that did not move, an output that did not switch).
struct PointFeedTests {
    @Test func sendsChangesAndSkipsRepeats() async {
        let feed = PointFeed()
        feed.send(.number(21), of: "b")
        feed.send(.number(20), of: "a")
        var values = feed.values().makeAsyncIterator()
        func next(_ values: inout ObservationStream<PointValue>.Iterator) async -> [String: JSONValue]? {
            await values.next().map { [$0.ioPointId: $0.value] }
        }
        #expect(await next(&values) == ["a": .number(20)])
        #expect(await next(&values) == ["b": .number(21)])
        feed.send(.number(20), of: "a")
        feed.send(.number(21), of: "b")
        feed.send(.number(20.5), of: "a")
        feed.send(.bool(true), of: "c")
        #expect(await next(&values) == ["a": .number(20.5)])
        #expect(await next(&values) == ["c": .bool(true)])
        #expect(feed.latest == ["a": .number(20.5), "b": .number(21), "c": .bool(true)])
    }

    /// The feed of an agent without a bridge keeps no value: nothing would read it.
    @Test func anUnreadFeedKeepsNothing() {
        let feed = PointFeed(isRead: false)
        feed.send(.number(21), of: "a")
        feed.send(.bool(true), of: "c")
        #expect(feed.latest.isEmpty)
    }
}
