import CoatyCommunication
import CoatyMQTT
import CoatyModel
import CoatyTestSupport
import MQTTTestSupport
import Testing

/// The manager's MQTT session as the broker sees it (mosquitto logs every packet): the subscriptions of requests
/// and observations.
@Suite struct SessionWireTests {
    /// The correlation ids of the Discovers an agent published, in order, from the broker's log.
    func discoverCorrelationIds(of agent: CommunicationManager, in broker: TestBroker) -> [String] {
        let marker = "Received PUBLISH from \(agent.clientId) (d0, q0, r0, m0, 'coaty/3/-/DSC/\(agent.identity.objectId)/"
        return broker.logText.components(separatedBy: marker).dropFirst().map { String($0.prefix { $0 != "'" }) }
    }

    /// A request's responses end when the consumer stops, when the timeout passes and when the manager stops, and
    /// each time the response subscription goes away.
    @Test func responseStreamsEndOnCancellationTimeoutAndStopAndUnsubscribe() async throws {
        let broker = try await TestBroker.started()
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let agent = scenarios.agent("requester")
        try await scenarios.online(agent)
        let client = agent.clientId

        let cancelled = Recorder(agent.publishDiscover(.coreTypes([.task])))
        try await poll { discoverCorrelationIds(of: agent, in: broker).count == 1 }
        let first = discoverCorrelationIds(of: agent, in: broker)[0]
        try await broker.waitForLog(containing: "\(client) 0 coaty/3/-/RSV/+/\(first)\n")
        cancelled.cancel()
        try await cancelled.waitFinished()
        try await broker.waitForLog(containing: "\(client) coaty/3/-/RSV/+/\(first)\n")

        let timed = Recorder(agent.publishDiscover(.coreTypes([.task]), timeout: .milliseconds(300)))
        try await timed.waitFinished()
        #expect(timed.elements.isEmpty)
        try await poll { discoverCorrelationIds(of: agent, in: broker).count == 2 }
        let second = discoverCorrelationIds(of: agent, in: broker)[1]
        try await broker.waitForLog(containing: "\(client) coaty/3/-/RSV/+/\(second)\n")

        let open = Recorder(agent.publishDiscover(.coreTypes([.task])))
        try await poll { discoverCorrelationIds(of: agent, in: broker).count == 3 }
        await agent.stop()
        try await open.waitFinished()
        try await broker.stop()
    }

    /// Coaty's rule: unsubscribing while offline deletes the subscription. One given up during an outage (a
    /// cancelled observation, an abandoned request) is not renewed on the reconnect; the others are.
    @Test func subscriptionsGivenUpWhileOfflineAreNotRenewed() async throws {
        let broker = try await TestBroker.started()
        let scenarios = CommunicationScenarios(port: broker.port) { () throws(MQTTError) in try MosquittoTransport() }
        let agent = scenarios.agent("agent")
        try await scenarios.online(agent)
        let client = agent.clientId
        let raw = Recorder(try agent.observeRaw(filter: "audit/raw"))
        let request = Recorder(agent.publishDiscover(.coreTypes([.task])))
        try await poll { discoverCorrelationIds(of: agent, in: broker).count == 1 }
        let responses = "coaty/3/-/RSV/+/\(discoverCorrelationIds(of: agent, in: broker)[0])"
        for filter in ["audit/raw", responses] {
            try await broker.waitForLog(containing: "\(client) 0 \(filter)\n")
        }

        try await broker.stop()
        try await poll { agent.communicationState != .online }
        raw.cancel()
        request.cancel()
        try await raw.waitFinished()
        try await request.waitFinished()
        try await broker.start()
        try await poll(within: .seconds(20)) { agent.communicationState == .online }
        try await brokerSync(agent)

        func subscriptions(_ filter: String) -> Int {
            broker.logText.components(separatedBy: "\(client) 0 \(filter)\n").count - 1
        }
        #expect(subscriptions("coaty/3/-/DSC/+/+") == 2)
        #expect(subscriptions("audit/raw") == 1)
        #expect(subscriptions(responses) == 1)
        await agent.stop()
        try await broker.stop()
    }
}
