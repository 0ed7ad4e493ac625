import CoatyModel
import Testing

@testable import CoatyCommunication

extension ResponseSubscriptions.Taken {
    /// The response topics of the request's one or two publications.
    var responseTopics: [ResponseSubscriptions.ResponseTopic] { [first] + (second.map { [$0] } ?? []) }
}

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
        #expect(!first.needsUpkeep)
        #expect(responses.spareCount(of: .returnEvent) == ResponseSubscriptions.spareCount)
        // Another response type has spares of its own.
        #expect(responses.spareCount(of: .resolve) == 0)
    }

    /// `upkeep` with the test's topics.
    func upkeep(_ responses: inout ResponseSubscriptions) -> ResponseSubscriptions.Upkeep {
        responses.upkeep { responseType, correlationId in
            responseType == .returnEvent ? filter(correlationId) : "\(responseType.rawValue) \(correlationId)"
        }
    }

    /// Later requests take spares without a subscription of their own; the request that finds them half gone asks
    /// for an upkeep (once until it runs), which refills them a batch at a time.
    @Test func laterRequestsTakeSparesAndAskForARefillInBatches() throws {
        var (responses, _) = pool()
        _ = responses.take(1, of: .returnEvent, filter: filter)
        var refills: [[String]] = []
        var used: [String] = []
        for _ in 0..<(4 * ResponseSubscriptions.batchSize) {
            let taken = try take(of: .returnEvent, from: &responses)
            #expect(taken.subscribeBefore.isEmpty)
            used += taken.responseTopics.map(\.correlationId)
            let lowest = ResponseSubscriptions.spareCount - ResponseSubscriptions.batchSize
            #expect(taken.needsUpkeep == (responses.spareCount(of: .returnEvent) == lowest))
            if taken.needsUpkeep {
                let made = upkeep(&responses)
                #expect(made.unsubscribe.isEmpty)
                refills.append(made.subscribe)
                #expect(responses.spareCount(of: .returnEvent) == ResponseSubscriptions.spareCount)
            }
        }
        #expect(refills.count == 4)
        #expect(refills.allSatisfy { $0.count == ResponseSubscriptions.batchSize })
        #expect(refills.joined().allSatisfy { $0.hasPrefix("coaty/3/-/RTN/+/c") })
        #expect(Set(used).count == used.count)
        #expect(!used.contains("c0"))
    }

    /// Until the upkeep runs, requests take the spares left and do not ask again; with none left, a request
    /// subscribes its own topic and fresh spares ahead of it, and the upkeep it asked for finds nothing to do.
    @Test func requestsBeforeTheUpkeepRunsTakeTheSparesLeft() throws {
        var (responses, _) = pool()
        _ = try take(of: .returnEvent, from: &responses)
        var asked = 0
        var used: [String] = []
        for _ in 0..<(ResponseSubscriptions.spareCount + 1) {
            let taken = try take(of: .returnEvent, from: &responses)
            if taken.needsUpkeep { asked += 1 }
            used += taken.responseTopics.map(\.correlationId)
        }
        #expect(asked == 1)
        #expect(responses.isUpkeepDue)
        // The 33rd found none: its own topic and 32 fresh spares, one packet ahead of it.
        #expect(responses.spareCount(of: .returnEvent) == ResponseSubscriptions.spareCount)
        #expect(Set(used).count == used.count)
        let made = upkeep(&responses)
        #expect(made == .init(subscribe: [], unsubscribe: []))
        #expect(!responses.isUpkeepDue)
    }

    /// One upkeep refills every response type whose spares are half gone, each with its own topics.
    @Test func anUpkeepRefillsEveryResponseType() throws {
        var (responses, _) = pool()
        _ = try take(of: .returnEvent, from: &responses)
        _ = try take(of: .resolve, from: &responses)
        var asked = 0
        for _ in 0..<ResponseSubscriptions.batchSize {
            if try take(of: .returnEvent, from: &responses).needsUpkeep { asked += 1 }
            if try take(of: .resolve, from: &responses).needsUpkeep { asked += 1 }
        }
        #expect(asked == 1)
        let made = upkeep(&responses)
        #expect(made.subscribe.count == 2 * ResponseSubscriptions.batchSize)
        #expect(made.subscribe.filter { $0.hasPrefix("coaty/3/-/RTN/+/") }.count == ResponseSubscriptions.batchSize)
        #expect(made.subscribe.filter { $0.hasPrefix("RSV ") }.count == ResponseSubscriptions.batchSize)
        #expect(responses.spareCount(of: .returnEvent) == ResponseSubscriptions.spareCount)
        #expect(responses.spareCount(of: .resolve) == ResponseSubscriptions.spareCount)
    }

    /// Ended topics wait for a later request, which asks for an upkeep that gives them up once a batch has ended;
    /// offline, and when the connection is lost, they are given up at once.
    @Test func endedTopicsAreGivenUpByTheUpkeepAfterTheNextRequest() throws {
        var (responses, _) = pool()
        let batch = ResponseSubscriptions.batchSize
        var topics: [String] = []
        for _ in 0..<(batch + 3) {
            let taken = try take(of: .returnEvent, from: &responses)
            #expect(taken.responseTopics.allSatisfy { $0.topicFilter == filter($0.correlationId) })
            if taken.needsUpkeep { #expect(upkeep(&responses).unsubscribe.isEmpty) }
            topics += taken.responseTopics.map(\.topicFilter)
        }
        #expect(responses.pendingCount == batch + 3)
        for topic in topics.prefix(batch) {
            #expect(responses.release(topic, isOnline: true).isEmpty)
        }
        #expect(responses.ended == Array(topics.prefix(batch)))
        let next = try take(of: .returnEvent, from: &responses)
        #expect(next.needsUpkeep)
        #expect(responses.ended == Array(topics.prefix(batch)))
        #expect(upkeep(&responses).unsubscribe == Array(topics.prefix(batch)))
        #expect(responses.ended.isEmpty)
        let offline = topics[batch]
        #expect(responses.release(offline, isOnline: false) == [offline])
        #expect(responses.release(topics[batch + 1], isOnline: true).isEmpty)
        // Fewer than a batch ended: they wait.
        #expect(!(try take(of: .returnEvent, from: &responses).needsUpkeep))
        #expect(upkeep(&responses).unsubscribe.isEmpty)
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

    /// Requests that do not end (more of them than spares) still find spares: the upkeep refills them after every
    /// batch taken, so none waits for a subscription of its own, and the spares stay bounded.
    @Test func manyPendingRequestsStillTakeSpares() throws {
        var (responses, _) = pool()
        var all = try take(of: .resolve, from: &responses).responseTopics.map(\.correlationId)
        for _ in 0..<(3 * ResponseSubscriptions.spareCount) {
            let taken = try take(of: .resolve, from: &responses)
            #expect(taken.subscribeBefore.isEmpty)
            if taken.needsUpkeep { _ = upkeep(&responses) }
            all += taken.responseTopics.map(\.correlationId)
            #expect(responses.spareCount(of: .resolve) <= ResponseSubscriptions.spareCount)
        }
        #expect(Set(all).count == all.count)
        #expect(responses.pendingCount == all.count)
    }
}
