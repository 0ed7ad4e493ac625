import CoatyModel
import Testing

@testable import CoatyCommunication

/// The bookkeeping of response topics subscribed ahead of requests: which topics go out when, that a correlation id
/// is used once, and that memory stays bounded.
@Suite struct ResponseSubscriptionsTests {
    /// Correlation ids "c0", "c1", ... in the order they are made.
    final class Counter: @unchecked Sendable {
        var next = 0
        func make(_ count: Int) -> [String] {
            defer { next += count }
            return (next..<(next + count)).map { "c\($0)" }
        }
    }

    func pool(maximumPending: Int = 100) -> (ResponseSubscriptions, Counter) {
        let counter = Counter()
        return (ResponseSubscriptions(maximumPending: maximumPending, makeCorrelationIds: counter.make), counter)
    }

    func filter(_ correlationId: String) -> String { "coaty/3/-/RTN/+/\(correlationId)" }

    /// `take`, required to succeed.
    func take(
        _ count: Int = 1, of responseType: CoatyEventType, from responses: inout ResponseSubscriptions
    ) throws -> ResponseSubscriptions.Taken {
        let taken = responses.take(count, of: responseType, filter: filter)
        return try #require(taken)
    }

    @Test func theFirstRequestSubscribesItsTopicAndTheSparesInOneGoAheadOfIt() throws {
        var (responses, _) = pool()
        let first = try take(of: .returnEvent, from: &responses)
        #expect(first.responseTopics == [.init(correlationId: "c0", topicFilter: filter("c0"))])
        #expect(first.subscribeBefore == (0...ResponseSubscriptions.spareCount).map { filter("c\($0)") })
        #expect(first.subscribeAfter.isEmpty)
        #expect(responses.spareCount(of: .returnEvent) == ResponseSubscriptions.spareCount)
        // Another response type has spares of its own.
        #expect(responses.spareCount(of: .resolve) == 0)
    }

    /// Later requests take spares without a subscription of their own; the spares are refilled a batch at a time,
    /// after the request that found them half gone.
    @Test func laterRequestsTakeSparesAndRefillInBatches() throws {
        var (responses, _) = pool()
        _ = responses.take(1, of: .returnEvent, filter: filter)
        var refills: [[String]] = []
        var used: [String] = []
        for _ in 0..<(4 * ResponseSubscriptions.batchSize) {
            let taken = try take(of: .returnEvent, from: &responses)
            #expect(taken.subscribeBefore.isEmpty)
            used += taken.responseTopics.map(\.correlationId)
            if !taken.subscribeAfter.isEmpty { refills.append(taken.subscribeAfter) }
            let lowest = ResponseSubscriptions.spareCount - ResponseSubscriptions.batchSize
            #expect(responses.spareCount(of: .returnEvent) > lowest)
        }
        #expect(refills.count == 4)
        #expect(refills.allSatisfy { $0.count == ResponseSubscriptions.batchSize })
        #expect(Set(used).count == used.count)
        #expect(!used.contains("c0"))
    }

    /// Ended topics wait for the next request, which gives them up after its publication once a batch has ended;
    /// offline, and when the connection is lost, they are given up at once.
    @Test func endedTopicsAreGivenUpAfterTheNextRequest() throws {
        var (responses, _) = pool()
        let batch = ResponseSubscriptions.batchSize
        var topics: [String] = []
        for _ in 0..<(batch + 3) {
            let taken = try take(of: .returnEvent, from: &responses)
            #expect(taken.responseTopics.allSatisfy { $0.topicFilter == filter($0.correlationId) })
            #expect(taken.unsubscribeAfter.isEmpty)
            topics += taken.responseTopics.map(\.topicFilter)
        }
        #expect(responses.pendingCount == batch + 3)
        for topic in topics.prefix(batch) {
            #expect(responses.release(topic, isOnline: true).isEmpty)
        }
        #expect(responses.ended == Array(topics.prefix(batch)))
        let next = try take(of: .returnEvent, from: &responses)
        #expect(next.unsubscribeAfter == Array(topics.prefix(batch)))
        #expect(responses.ended.isEmpty)
        let offline = topics[batch]
        #expect(responses.release(offline, isOnline: false) == [offline])
        #expect(responses.release(topics[batch + 1], isOnline: true).isEmpty)
        // Fewer than a batch ended: they wait.
        #expect(try take(of: .returnEvent, from: &responses).unsubscribeAfter.isEmpty)
        #expect(responses.releaseEnded() == [topics[batch + 1]])
        #expect(responses.ended.isEmpty)
        #expect(responses.pendingCount == 3)
    }

    /// Requests that end with no request after them: their topics are given up as the last of `maximumEnded` ends,
    /// so that they stay bounded.
    @Test func endedTopicsWithoutALaterRequestAreGivenUpAtTheBound() throws {
        var (responses, _) = pool()
        let count = ResponseSubscriptions.maximumEnded
        var topics: [String] = []
        for _ in 0..<count {
            topics += try take(of: .resolve, from: &responses).responseTopics.map(\.topicFilter)
        }
        for topic in topics.dropLast() {
            #expect(responses.release(topic, isOnline: true).isEmpty)
        }
        #expect(responses.release(topics[count - 1], isOnline: true) == topics)
        #expect(responses.ended.isEmpty)
        #expect(responses.pendingCount == 0)
    }

    /// Requests beyond the limit are refused without using a spare; an ended one makes room. An Update takes two.
    @Test func refusesRequestsBeyondTheLimit() throws {
        var (responses, counter) = pool(maximumPending: 3)
        let update = try take(2, of: .complete, from: &responses)
        #expect(update.responseTopics.count == 2 && Set(update.responseTopics.map(\.correlationId)).count == 2)
        #expect(responses.take(2, of: .complete, filter: filter) == nil)
        let made = counter.next
        let single = try take(of: .complete, from: &responses)
        #expect(responses.take(1, of: .returnEvent, filter: filter) == nil)
        #expect(counter.next == made)
        _ = responses.release(try #require(single.responseTopics.first).topicFilter, isOnline: true)
        #expect(responses.take(1, of: .returnEvent, filter: filter) != nil)
        #expect(responses.pendingCount == 3)
    }

    /// Requests that do not end (more of them than spares) still find spares: the refill follows every batch
    /// taken, so none waits for a subscription of its own, and the spares stay bounded.
    @Test func manyPendingRequestsStillTakeSpares() throws {
        var (responses, _) = pool()
        var all = try take(of: .resolve, from: &responses).responseTopics.map(\.correlationId)
        for _ in 0..<(3 * ResponseSubscriptions.spareCount) {
            let taken = try take(of: .resolve, from: &responses)
            #expect(taken.subscribeBefore.isEmpty)
            all += taken.responseTopics.map(\.correlationId)
            #expect(responses.spareCount(of: .resolve) <= ResponseSubscriptions.spareCount)
        }
        #expect(Set(all).count == all.count)
        #expect(responses.pendingCount == all.count)
    }
}
