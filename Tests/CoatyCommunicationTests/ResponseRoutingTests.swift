import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyTestSupport
import Synchronization
import Testing

@testable import CoatyCommunication

/// Requests on response topics subscribed ahead (`ResponseSubscriptions`), over an in-memory broker: every request
/// gets its own responses, ended and unknown correlations are ignored, and the limit of pending requests holds.
@Suite struct ResponseRoutingTests {
    let broker = InMemoryBroker()

    func manager(
        _ name: String, maximumPendingRequests: Int = CommunicationOptions.defaultMaximumPendingRequests
    ) -> CommunicationManager {
        let broker = self.broker
        return CommunicationManager(
            identity: Identity(name: name),
            options: CommunicationOptions(maximumPendingRequests: maximumPendingRequests),
            makeTransport: { broker.makeTransport() })
    }

    func online(_ managers: CommunicationManager...) async throws {
        for manager in managers {
            manager.start()
            try await poll { manager.communicationState == .online }
        }
    }

    /// An echo responder: each Call is answered with its own parameters.
    func echo(on responder: CommunicationManager, _ operation: String = "echo") throws -> Task<Void, Never> {
        let calls = try responder.observeCall(operation: operation)
        return Task {
            for await call in calls {
                try? await call.respond(ReturnEvent(.result(call.event.parameters ?? .null)))
            }
        }
    }

    @Test func concurrentCallsEachGetTheirOwnReturn() async throws {
        let requester = manager("requester")
        let responder = manager("responder")
        try await online(requester, responder)
        let answering = try echo(on: responder)
        let count = 60
        let results = try await withThrowingTaskGroup(of: (Int, [JSONValue]).self) { group in
            for index in 0..<count {
                group.addTask {
                    var returned: [JSONValue] = []
                    let call = CallEvent(operation: "echo", parameters: ["index": .number(Double(index))])
                    for await response in try requester.publishCall(call, timeout: .seconds(20)) {
                        if case .result(let value) = response.event.outcome { returned.append(value) }
                        break
                    }
                    return (index, returned)
                }
            }
            var results: [Int: [JSONValue]] = [:]
            for try await (index, returned) in group { results[index] = returned }
            return results
        }
        #expect(results.count == count)
        for index in 0..<count {
            #expect(results[index] == [["index": .number(Double(index))]], "call \(index)")
        }
        // Every Call had its own correlation id.
        let calls = broker.publishedMessages.filter { $0.topic.contains("/CLL:echo/") }.map(\.topic)
        #expect(calls.count == count && Set(calls.map { $0.split(separator: "/").last }).count == count)
        #expect(requester.statistics.responsesRejected == 0)
        answering.cancel()
        await requester.stop()
        await responder.stop()
    }

    /// A Return that comes after its call's observation ended, and one on a topic subscribed ahead that no call has
    /// used yet, reach the requester and are dropped without a trace; the next call is answered as usual.
    @Test func returnsOfEndedOrUnknownCorrelationsAreIgnored() async throws {
        let requester = manager("requester")
        let responder = manager("responder")
        try await online(requester, responder)
        let held = Recorder(try responder.observeCall(operation: "slow"))
        let ended = Recorder(try requester.publishCall(CallEvent(operation: "slow"), timeout: .milliseconds(200)))
        let call = try #require(try await held.wait(count: 1).first)
        try await ended.waitFinished()
        #expect(ended.elements.isEmpty)
        let received = requester.statistics.messagesReceived
        try await call.respond(ReturnEvent(.result("late")))

        // A topic subscribed ahead of a later call.
        let spare = try #require(
            requester.state.withLock { state in
                state.subscriptions.first { $0.contains("/RTN/") && !$0.hasSuffix(call.correlationId) }
            })
        let spareCorrelationId = String(try #require(spare.split(separator: "/").last))
        responder.publish(.returnEvent(ReturnEvent(.result("unasked"))), correlationId: spareCorrelationId)
        try await poll { requester.statistics.messagesReceived >= received + 2 }
        #expect(requester.statistics.responsesRejected == 0)
        #expect(requester.statistics.messagesRejected == 0)

        let answering = try echo(on: responder)
        let next = Recorder(
            try requester.publishCall(CallEvent(operation: "echo", parameters: ["n": 1]), timeout: .seconds(20)))
        let answers = try await next.wait(count: 1)
        #expect(answers.map(\.event.outcome) == [.result(["n": 1])])
        answering.cancel()
        await requester.stop()
        await responder.stop()
    }

    /// Beyond `maximumPendingRequests`, a request is not published and its responses end at once; it is counted.
    /// An ended request makes room again.
    @Test func requestsBeyondTheLimitAreRefused() async throws {
        let requester = manager("requester", maximumPendingRequests: 2)
        try await online(requester)
        let first = Recorder(try requester.publishCall(CallEvent(operation: "nobody")))
        let second = Recorder(requester.publishQuery(QueryEvent(objectTypes: ["com.example.T"])))
        try await poll {
            broker.publishedMessages.filter { $0.topic.contains("/CLL:") || $0.topic.contains("/QRY/") }.count == 2
        }
        let refused = Recorder(try requester.publishCall(CallEvent(operation: "nobody")))
        try await refused.waitFinished()
        #expect(requester.statistics.requestsRefused == 1)
        #expect(broker.publishedMessages.filter { $0.topic.contains("/CLL:") }.count == 1)

        first.cancel()
        try await first.waitFinished()
        let third = Recorder(try requester.publishCall(CallEvent(operation: "nobody")))
        try await poll { broker.publishedMessages.filter { $0.topic.contains("/CLL:") }.count == 2 }
        #expect(requester.statistics.requestsRefused == 1)
        #expect(!third.isFinished && !second.isFinished)
        await requester.stop()
        try await third.waitFinished()
        try await second.waitFinished()
    }
    /// The response topics of ended calls are given up after the next call is published, not ahead of it: a caller
    /// that calls again as soon as a Return arrives would otherwise wait for the UNSUBSCRIBE (and the broker's change
    /// of its subscriptions) before its Call goes out. The spares are refilled after the call that found them half
    /// gone, in the same way.
    @Test func endedResponseTopicsAreGivenUpAndSparesRefilledAfterTheNextCall() async throws {
        let operations = TransportOperations()
        let broker = self.broker
        let requester = CommunicationManager(
            identity: Identity(name: "requester"), options: CommunicationOptions(),
            makeTransport: { RecordingTransport(broker.makeTransport(), operations: operations) })
        let responder = manager("responder")
        try await online(requester, responder)
        let answering = try echo(on: responder)
        let calls = ResponseSubscriptions.batchSize + 1
        var answered = 0
        for index in 0..<calls {
            let call = CallEvent(operation: "echo", parameters: ["index": .number(Double(index))])
            for await _ in try requester.publishCall(call, timeout: .seconds(20)) {
                answered += 1
                break
            }
        }
        #expect(answered == calls)
        let batch = ResponseSubscriptions.batchSize
        // The upkeep runs as a job after the last call's publication: wait for its packets.
        try await poll { operations.all.contains { $0.hasPrefix("unsubscribe ") } }
        let recorded = operations.all
        let callIndices = recorded.indices.filter { recorded[$0].hasPrefix("publish coaty/3/-/CLL:echo/") }
        #expect(callIndices.count == calls)
        let givingUp = recorded.indices.filter { recorded[$0].hasPrefix("unsubscribe ") }
        #expect(givingUp.count == 1, "\(recorded)")
        #expect(givingUp.allSatisfy { $0 > callIndices[calls - 1] }, "\(recorded)")
        #expect(givingUp.map { recorded[$0] } == ["unsubscribe \(batch) RTN topics"])
        // The first call subscribed its topic and the spares ahead of it; the refill came after call 17, which
        // found them half gone.
        let subscribing = recorded.indices.filter {
            recorded[$0].hasSuffix(" RTN topics") && recorded[$0].hasPrefix("subscribe ")
        }
        #expect(
            subscribing.map { recorded[$0] } == [
                "subscribe \(ResponseSubscriptions.spareCount + 1) RTN topics", "subscribe \(batch) RTN topics",
            ], "\(recorded)")
        #expect(subscribing.count == 2 && subscribing[0] < callIndices[0] && subscribing[1] > callIndices[calls - 1])
        answering.cancel()
        await requester.stop()
        await responder.stop()
    }
}

/// What a manager asked of its transport, in order.
final class TransportOperations: Sendable {
    private let operations = Mutex<[String]>([])

    func record(_ operation: String) { operations.withLock { $0.append(operation) } }

    var all: [String] { operations.withLock { $0 } }
}

/// An in-memory transport that records publications by topic and subscription changes by count.
final class RecordingTransport: MQTTTransport, Sendable {
    private let inner: InMemoryTransport
    private let operations: TransportOperations

    init(_ inner: InMemoryTransport, operations: TransportOperations) {
        self.inner = inner
        self.operations = operations
    }

    var connectionEvents: AsyncStream<MQTTConnectionEvent> { inner.connectionEvents }

    func connect(
        _ options: MQTTConnectOptions, executor: ConnectionExecutor?,
        onMessage handler: @escaping @Sendable (MQTTInbound) -> Void
    ) {
        inner.connect(options, executor: executor, onMessage: handler)
    }

    func publish(_ message: MQTTMessage) throws(MQTTError) {
        operations.record("publish \(message.topic)")
        try inner.publish(message)
    }

    func subscribe(_ topicFilter: String) throws(MQTTError) { try subscribe([topicFilter]) }

    func subscribe(_ topicFilters: [String]) throws(MQTTError) {
        operations.record("subscribe \(Self.describe(topicFilters))")
        for filter in topicFilters { try inner.subscribe(filter) }
    }

    func unsubscribe(_ topicFilter: String) throws(MQTTError) { try unsubscribe([topicFilter]) }

    func unsubscribe(_ topicFilters: [String]) throws(MQTTError) {
        operations.record("unsubscribe \(Self.describe(topicFilters))")
        for filter in topicFilters { try inner.unsubscribe(filter) }
    }

    func disconnect(_ mode: MQTTDisconnectMode) async { await inner.disconnect(mode) }

    /// "8 RTN topics", or the filters themselves when they are not all response topics.
    private static func describe(_ filters: [String]) -> String {
        filters.allSatisfy { $0.contains("/RTN/") } ? "\(filters.count) RTN topics" : filters.joined(separator: " ")
    }
}
