import CoatyModel

/// Response topics subscribed ahead of the requests that use them.
///
/// A requester subscribes to `coaty/3/<ns>/<RSP>/+/<correlationId>` before it publishes its request and gives the
/// subscription up when the responses are no longer observed (§1.5 of the protocol). Done per request, that is a
/// SUBSCRIBE and an UNSUBSCRIBE, each acknowledged, and two changes of the broker's subscription tree around every
/// Call: most of a round trip's cost beyond the Call and its Return. So each response type keeps `spareCount`
/// correlation ids whose topics are subscribed already: a request takes one and publishes at once, and topics are
/// subscribed and given up `batchSize` at a time, in one packet each. The filters stay exact (a wildcard in the
/// correlation level would bring this agent every other agent's responses), the correlation ids stay fresh UUIDs
/// used once, and the request and response frames other agents see are the same as before.
///
/// A topic whose request ended stays subscribed until its batch is given up; a late response on it finds no
/// observer and is dropped. While offline a topic is given up at once (no packet; it is not renewed on the
/// reconnect), and so are the ended ones still waiting when the connection is lost. Memory is bounded: the spares
/// per response type, a batch of ended topics, and at most `maximumPending` requests in flight.
struct ResponseSubscriptions {
    /// Topics subscribed ahead per response type (Resolve, Retrieve, Complete, Return) once one was requested.
    static let spareCount = 16
    /// Spares are subscribed, and ended topics given up, this many at a time.
    static let batchSize = 8

    /// What a request gets: its correlation id, and the topics to subscribe before it is published (the first
    /// request of a response type: its own and the spares) or after (spares refilled).
    struct Taken: Equatable {
        var correlationId: String
        var subscribeBefore: [String]
        var subscribeAfter: [String]
    }

    let maximumPending: Int
    private let makeCorrelationId: () -> String
    /// Correlation ids whose topics are subscribed and unused, per response type.
    private var spares: [CoatyEventType: [String]] = [:]
    /// Topics of ended requests, still subscribed.
    private(set) var ended: [String] = []
    private(set) var pendingCount = 0

    init(maximumPending: Int, makeCorrelationId: @escaping () -> String = { CoatyUUID.random() }) {
        self.maximumPending = maximumPending
        self.makeCorrelationId = makeCorrelationId
    }

    func spareCount(of responseType: CoatyEventType) -> Int { spares[responseType]?.count ?? 0 }

    /// Correlation ids for `count` requests with responses of `responseType` (an Update is published twice), each
    /// with its topic subscribed or to be subscribed before it is published; nil if that would make more than
    /// `maximumPending` requests in flight.
    mutating func take(
        _ count: Int, of responseType: CoatyEventType, filter: (String) -> String
    ) -> (correlationIds: [String], subscribeBefore: [String], subscribeAfter: [String])? {
        guard pendingCount + count <= maximumPending else { return nil }
        pendingCount += count
        var available = spares[responseType] ?? []
        var correlationIds: [String] = []
        var subscribeBefore: [String] = []
        for _ in 0..<count {
            if let spare = available.popLast() {
                correlationIds.append(spare)
            } else {
                let fresh = makeCorrelationId()
                correlationIds.append(fresh)
                subscribeBefore.append(filter(fresh))
            }
        }
        var subscribeAfter: [String] = []
        if available.count <= Self.spareCount - Self.batchSize {
            let fresh = (available.count..<Self.spareCount).map { _ in makeCorrelationId() }
            // The first request of a type subscribes its own topic and the spares in one packet, ahead of it.
            if subscribeBefore.isEmpty {
                subscribeAfter = fresh.map(filter)
            } else {
                subscribeBefore += fresh.map(filter)
            }
            available = fresh + available
        }
        spares[responseType] = available
        return (correlationIds, subscribeBefore, subscribeAfter)
    }

    /// The request of `topicFilter` ended; returns the topics to give up now.
    mutating func release(_ topicFilter: String, isOnline: Bool) -> [String] {
        pendingCount -= 1
        guard isOnline else { return [topicFilter] }
        ended.append(topicFilter)
        guard ended.count >= Self.batchSize else { return [] }
        defer { ended = [] }
        return ended
    }

    /// The connection was lost: the ended topics are given up at once, so that the reconnect does not renew them.
    mutating func releaseEnded() -> [String] {
        defer { ended = [] }
        return ended
    }
}
