import CoatyCommunication
import CoatyMQTT
import CoatyTestSupport
import MQTTTestSupport
import Testing

/// The scenarios over the in-memory broker: quick checks of the protocol logic.
@Suite struct InMemoryScenarioTests {
    let broker = InMemoryBroker()
    var communication: CommunicationScenarios {
        CommunicationScenarios(makeTransport: { [broker] in broker.makeTransport() })
    }
    var ioRouting: IoRoutingScenarios { IoRoutingScenarios(makeTransport: { [broker] in broker.makeTransport() }) }

    @Test func oneWayEvents() async throws { try await communication.oneWayEvents() }
    @Test func requestResponseEvents() async throws { try await communication.requestResponseEvents() }
    @Test func callReturnMatrix() async throws { try await communication.callReturnMatrix() }
    @Test func rawMessages() async throws { try await communication.rawMessages() }
    @Test func crossNamespaceIsolation() async throws { try await communication.crossNamespaceIsolation() }
    @Test func deferredPublications() async throws { try await communication.deferredPublicationsArriveAfterConnect() }
    @Test func connectionExecutor() async throws { try await communication.observersOnTheConnectionExecutor() }
    @Test func basicIoRouting() async throws { try await ioRouting.basicRoutingWithinOneContainer() }
    @Test func sourceHandles() async throws { try await ioRouting.sourceHandlesPublishAsTheirObjectIds() }
    @Test func ioRoutingAcrossContainers() async throws {
        try await ioRouting.routingAcrossContainersDependsOnContext()
    }
    @Test func routerFollowsNodesAndRates() async throws { try await ioRouting.routerFollowsNodesAndRates() }
    @Test func lateCensusAnswer() async throws { try await ioRouting.aNodeThatAnswersAfterTheCensusIsManaged() }
    @Test func actorStates() async throws { try await ioRouting.actorStatesCountErrorsAndReplayTheLatestValue() }
    @Test func sourceStrategies() async throws { try await ioRouting.sourceStrategiesOnAControlledClock() }
}

/// The same scenarios between agents on separate connections to a real mosquitto, through libmosquitto.
@Suite struct BrokerScenarioTests {
    func withBroker(_ body: (CommunicationScenarios, IoRoutingScenarios) async throws -> Void) async throws {
        let broker = try await TestBroker.started()
        let makeTransport: @Sendable () throws(MQTTError) -> any MQTTTransport = { () throws(MQTTError) in
            try MosquittoTransport()
        }
        try await body(
            CommunicationScenarios(port: broker.port, makeTransport: makeTransport),
            IoRoutingScenarios(port: broker.port, makeTransport: makeTransport))
        try await broker.stop()
    }

    @Test func oneWayEvents() async throws { try await withBroker { c, _ in try await c.oneWayEvents() } }
    @Test func requestResponseEvents() async throws {
        try await withBroker { c, _ in try await c.requestResponseEvents() }
    }
    @Test func callReturnMatrix() async throws { try await withBroker { c, _ in try await c.callReturnMatrix() } }
    @Test func rawMessages() async throws { try await withBroker { c, _ in try await c.rawMessages() } }
    @Test func crossNamespaceIsolation() async throws {
        try await withBroker { c, _ in try await c.crossNamespaceIsolation() }
    }
    @Test func deferredPublications() async throws {
        try await withBroker { c, _ in try await c.deferredPublicationsArriveAfterConnect() }
    }
    @Test func connectionExecutor() async throws {
        try await withBroker { c, _ in try await c.observersOnTheConnectionExecutor() }
    }
    @Test func basicIoRouting() async throws {
        try await withBroker { _, r in try await r.basicRoutingWithinOneContainer() }
    }
    @Test func sourceHandles() async throws {
        try await withBroker { _, r in try await r.sourceHandlesPublishAsTheirObjectIds() }
    }
    @Test func ioRoutingAcrossContainers() async throws {
        try await withBroker { _, r in try await r.routingAcrossContainersDependsOnContext() }
    }
    @Test func routerFollowsNodesAndRates() async throws {
        try await withBroker { _, r in try await r.routerFollowsNodesAndRates() }
    }
    @Test func lateCensusAnswer() async throws {
        try await withBroker { _, r in try await r.aNodeThatAnswersAfterTheCensusIsManaged() }
    }
    @Test func actorStates() async throws {
        try await withBroker { _, r in try await r.actorStatesCountErrorsAndReplayTheLatestValue() }
    }
    @Test func sourceStrategies() async throws {
        try await withBroker { _, r in try await r.sourceStrategiesOnAControlledClock() }
    }
}
