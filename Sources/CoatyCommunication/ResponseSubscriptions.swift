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
/// Both packets go out after a request's publication, never ahead of it, and are made off its path: the request
/// that finds the spares half gone, or a batch of ended topics waiting, asks for an upkeep (`Taken.needsUpkeep`),
/// which the manager runs as a job of the connection's thread, so in the thread's next turn, after the request is
/// written: made inside the request (the fresh correlation ids, their topics, the two packets: about 100 µs for a
/// batch of 16 each on a loaded 2-core machine), that work held the request itself back; now the broker forwards
/// the request and the responder answers while the thread makes it. The thread reads the response after it, so that
/// request is still the slowest of its batch (about 3x the others at p50). An UNSUBSCRIBE sent as a request ends
/// would delay the next request, which a caller typically publishes right then.
/// A topic whose request ended stays subscribed until the upkeep gives it up; a late response on it finds no
/// observer and is dropped. When no request follows, the ended topics are given up once `maximumEnded` of them
/// wait. While offline a topic is given up at once (no packet; it is not renewed on the reconnect), and so are the
/// ended ones still waiting when the connection is lost. Memory is bounded: the spares per response type,
/// `maximumEnded` ended topics, and at most `maximumPending` requests in flight.
struct ResponseSubscriptions {
    /// Topics subscribed ahead per response type (Resolve, Retrieve, Complete, Return) once one was requested.
    static let spareCount = 32
    /// Spares are subscribed, and ended topics given up, this many at a time: the request before them waits for the
    /// upkeep's work on its thread and the broker's change of its tree, so one in `batchSize` requests is slower;
    /// with 16, fewer than a tenth.
    static let batchSize = 16
    /// Ended topics are given up as their requests end once this many wait for a next request.
    static let maximumEnded = 4 * batchSize

    /// A correlation id with its response topic, made together so that the topic is built once.
    struct ResponseTopic: Equatable {
        var correlationId: String
        var topicFilter: String
    }

    /// What requests get: per request its correlation id and response topic (a request is published once or, an
    /// Update, twice: two fields rather than an array, which was an allocation with every request); the topics to
    /// subscribe before the requests are published (when no spare was left, as for the first request of a response
    /// type: its own and fresh spares, one packet); and whether `upkeep` is due once they are published.
    struct Taken: Equatable {
        var first: ResponseTopic
        var second: ResponseTopic?
        var subscribeBefore: [String]
        var needsUpkeep: Bool
    }

    /// What an upkeep changes: spares to subscribe, ended topics to give up.
    struct Upkeep: Equatable {
        var subscribe: [String]
        var unsubscribe: [String]
    }

    let maximumPending: Int
    /// Makes that many fresh correlation ids.
    private let makeCorrelationIds: (Int) -> [String]
    /// Correlation ids whose topics are subscribed and unused, per response type.
    private var spares: [CoatyEventType: [ResponseTopic]] = [:]
    /// Topics of ended requests, still subscribed.
    private(set) var ended: [String] = []
    private(set) var pendingCount = 0
    /// An upkeep was asked for and has not run yet: later requests do not ask again.
    private(set) var isUpkeepDue = false

    init(maximumPending: Int, makeCorrelationIds: @escaping (Int) -> [String] = { CoatyUUID.random(count: $0) }) {
        self.maximumPending = maximumPending
        self.makeCorrelationIds = makeCorrelationIds
    }

    func spareCount(of responseType: CoatyEventType) -> Int { spares[responseType]?.count ?? 0 }

    /// Correlation ids for `count` requests (1, or 2 for an Update published twice) with responses of
    /// `responseType`, each with its topic (`filter` of the correlation id) subscribed or to be subscribed before it
    /// is published; nil if that would make more than `maximumPending` requests in flight.
    mutating func take(_ count: Int, of responseType: CoatyEventType, filter: (String) -> String) -> Taken? {
        precondition(count == 1 || count == 2, "a request is published once or twice")
        guard pendingCount + count <= maximumPending else { return nil }
        pendingCount += count
        let makeCorrelationIds = makeCorrelationIds
        var subscribeBefore: [String] = []
        /// The newest spare, or a fresh correlation id whose topic is to be subscribed first.
        func takeOne(from spares: inout [ResponseTopic]) -> ResponseTopic {
            if let spare = spares.popLast() { return spare }
            let fresh = makeCorrelationIds(1)[0]
            let topicFilter = filter(fresh)
            subscribeBefore.append(topicFilter)
            return ResponseTopic(correlationId: fresh, topicFilter: topicFilter)
        }
        /// One access to the spares, in place in the dictionary (its `default:` subscript): not copied, hashed once.
        func takeAll(from spares: inout [ResponseTopic]) -> (ResponseTopic, ResponseTopic?, isLow: Bool) {
            let first = takeOne(from: &spares)
            let second = count == 2 ? takeOne(from: &spares) : nil
            // The request waits for a subscription anyway: the spares go in the same packet, ahead of it.
            if !subscribeBefore.isEmpty {
                subscribeBefore += Self.refill(&spares, makeCorrelationIds: makeCorrelationIds, filter: filter)
            }
            return (first, second, Self.isLow(spares))
        }
        let (first, second, isLow) = takeAll(from: &spares[responseType, default: []])
        var taken = Taken(first: first, second: second, subscribeBefore: subscribeBefore, needsUpkeep: false)
        if !isUpkeepDue && (isLow || ended.count >= Self.batchSize) {
            isUpkeepDue = true
            taken.needsUpkeep = true
        }
        return taken
    }

    /// After the requests that asked for it are published: refills the spares of every response type that are half
    /// gone and gives up the ended topics once a batch of them waits. `filter` makes the topic of a correlation id
    /// for a response type.
    mutating func upkeep(filter: (CoatyEventType, String) -> String) -> Upkeep {
        isUpkeepDue = false
        let makeCorrelationIds = makeCorrelationIds
        var upkeep = Upkeep(subscribe: [], unsubscribe: [])
        for responseType in spares.keys.filter({ Self.isLow(spares[$0] ?? []) }) {
            upkeep.subscribe += Self.refill(
                &spares[responseType, default: []], makeCorrelationIds: makeCorrelationIds
            ) { filter(responseType, $0) }
        }
        if ended.count >= Self.batchSize {
            upkeep.unsubscribe = ended
            ended = []
        }
        return upkeep
    }

    private static func isLow(_ spares: [ResponseTopic]) -> Bool { spares.count <= spareCount - batchSize }

    /// Fresh spares up to `spareCount` (used after the older ones); returns their topics.
    private static func refill(
        _ spares: inout [ResponseTopic], makeCorrelationIds: (Int) -> [String], filter: (String) -> String
    ) -> [String] {
        guard spares.count < Self.spareCount else { return [] }
        let fresh = makeCorrelationIds(Self.spareCount - spares.count).map { correlationId in
            ResponseTopic(correlationId: correlationId, topicFilter: filter(correlationId))
        }
        spares = fresh + spares
        return fresh.map(\.topicFilter)
    }

    /// The request of `topicFilter` ended; returns the topics to give up now: none while online, unless
    /// `maximumEnded` wait (an upkeep after a later request gives them up).
    mutating func release(_ topicFilter: String, isOnline: Bool) -> [String] {
        pendingCount -= 1
        guard isOnline else { return [topicFilter] }
        ended.append(topicFilter)
        guard ended.count >= Self.maximumEnded else { return [] }
        defer { ended = [] }
        return ended
    }

    /// The connection was lost: the ended topics are given up at once, so that the reconnect does not renew them.
    mutating func releaseEnded() -> [String] {
        defer { ended = [] }
        return ended
    }
}
