import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// What an agent keeps about other agents stays within its limits however many advertisements arrive through a
/// real mosquitto; past a limit, new entries are refused and counted, and a deadvertisement frees a place.
@Suite(.timeLimit(.minutes(1))) struct RetentionLimitTests {
    static func identity(_ id: String, padding: Int = 0) -> String {
        #"{"object":{"coreType":"Identity","objectType":"coaty.Identity","objectId":"\#(id)","name":"agent \#(id)","#
            + #""padding":"\#(String(repeating: "p", count: padding))"}}"#
    }

    static func ioNode(_ id: String, context: String = "ctx", sourceId: String? = nil) -> String {
        let source =
            #"{"coreType":"IoSource","objectType":"coaty.IoSource","objectId":"\#(sourceId ?? "source-" + id)","#
            + #""name":"source \#(id)","valueType":"t"}"#
        return #"{"object":{"coreType":"IoNode","objectType":"coaty.IoNode","objectId":"\#(id)","name":"\#(context)","#
            + #""ioSources":[\#(source)],"ioActors":[]}}"#
    }

    @Test("agent presence keeps at most its limits of agents, nodes per agent and bytes")
    func presenceIsBounded() async throws {
        let broker = try await TestBroker.started()
        let manager = CommunicationManager(
            identity: Identity(name: "watcher"), options: CommunicationOptions(port: broker.port))
        let limits = PresenceLimits(
            agents: RetentionLimit(maximumCount: 5, maximumBytes: 4096), maximumNodesPerAgent: 2)
        let presence = AgentPresence(manager: manager, censusTimeout: .milliseconds(200), limits: limits)
        let tracking = Task { await presence.run() }
        manager.start()
        try await poll { presence.agents.count == 1 }  // itself, from its own advertisement
        try await brokerSync(manager)
        let peer = try await TestClient.connected(to: broker)

        // Identities, nodes and deadvertisements are observed by separate tasks: each step waits for the last.
        for index in 0..<50 {
            try peer.publish("coaty/3/-/ADV:Identity/agent-\(index)", Self.identity("agent-\(index)"))
        }
        try await poll { presence.refusedCount == 46 }
        for index in 0..<5 { try peer.publish("coaty/3/-/ADV:IoNode/agent-0", Self.ioNode("node-\(index)")) }
        // Nodes of an agent whose identity never comes would otherwise be kept for good.
        for index in 0..<20 {
            try peer.publish("coaty/3/-/ADV:IoNode/ghost-\(index)", Self.ioNode("ghost-node-\(index)"))
        }
        try await poll { presence.refusedCount == 46 + 3 + 20 }
        #expect(
            presence.agents.map(\.agentId).sorted()
                == ["agent-0", "agent-1", "agent-2", "agent-3", manager.identity.objectId].sorted())
        #expect(presence.agent("agent-0")?.ioNodes.map(\.objectId) == ["node-0", "node-1"])

        // A deadvertised agent makes room for another, within the byte limit only.
        try peer.publish("coaty/3/-/DAD/agent-1", #"{"objectIds":["agent-1","agent-2"]}"#)
        try await poll { presence.agents.count == 3 }
        try peer.publish("coaty/3/-/ADV:Identity/big", Self.identity("big", padding: 4096))
        try peer.publish("coaty/3/-/ADV:Identity/agent-10", Self.identity("agent-10"))
        try await poll { presence.agent("agent-10") != nil }
        #expect(presence.agent("big") == nil)
        #expect(presence.refusedCount == 46 + 3 + 20 + 1)

        tracking.cancel()
        await manager.stop()
        await tracking.value
        try await broker.stop()
    }

    @Test("an IO router manages at most its node limit; a deadvertised node makes room")
    func routerNodesAreBounded() async throws {
        let broker = try await TestBroker.started()
        let router = IoRouter(
            context: IoContext(name: "ctx"), nodeLimit: RetentionLimit(maximumCount: 3, maximumBytes: 1 << 20))
        let container = try await Container.resolve(
            configuration: Configuration(
                identity: Identity(name: "router"), communication: CommunicationOptions(port: broker.port)),
            controllers: [("Router", router)])
        container.start()
        try await brokerSync(container.communicationManager)
        let peer = try await TestClient.connected(to: broker)

        for index in 0..<40 { try peer.publish("coaty/3/-/ADV:IoNode/peer", Self.ioNode("node-\(index)")) }
        try await poll { router.refusedNodeCount == 37 }
        #expect(router.managedNodeIds == ["node-0", "node-1", "node-2"])
        // A new version of a managed node is still taken.
        try peer.publish("coaty/3/-/ADV:IoNode/peer", Self.ioNode("node-1", sourceId: "another-source"))
        try peer.publish("coaty/3/-/DAD/peer", #"{"objectIds":["node-0"]}"#)
        try await poll { router.managedNodeIds == ["node-1", "node-2"] }
        try peer.publish("coaty/3/-/ADV:IoNode/peer", Self.ioNode("node-40"))
        try await poll { router.managedNodeIds == ["node-1", "node-2", "node-40"] }
        #expect(router.refusedNodeCount == 37)

        await container.shutdown()
        try await broker.stop()
    }
}
