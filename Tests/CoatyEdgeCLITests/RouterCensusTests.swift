import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// After a broker restart the router takes a census of the IO nodes (a Discover): nodes that neither answer nor
/// advertise themselves are dropped, since their agents' wills may have gone out while it was offline. An actor agent
/// that came back before the router advertised itself when the router could not hear it, so its answer to the census
/// is all the router learns of it; when that answer is late (a loaded machine) or lost (the broker drops a QoS 0
/// message for a client that falls behind, such as an actor flooded by the source's offline queue after a long
/// outage), the router used to drop the actor's node and disassociate it for good: no value reached it again. Real
/// `coaty-edge run` agents; the actor is held with SIGSTOP while the router's first census Discover waits for it.
@Suite(.serialized) struct RouterCensusTests {
    static let context = "Census"
    static let sourceId = "5a1c0000-0000-4000-8000-000000000010"

    /// Real agents of the census context on `broker`, started in this order: a router, an actor (its console
    /// controller logs "Display received" for every value) and a source polling a thermal zone at 40 °C every 100 ms
    /// in a sysfs tree of `scratch`; the source is started with `sourceArguments` too.
    static func startAgents(
        broker: TestBroker, in scratch: ScratchDirectory, sourceArguments: [String] = []
    ) async throws -> (
        source: CoatyTestSupport.ChildProcess, router: CoatyTestSupport.ChildProcess,
        actor: CoatyTestSupport.ChildProcess
    ) {
        try scratch.write("40000\n", to: "sys/class/thermal/thermal_zone0/temp")
        let sysfsRoot = scratch.url.appendingPathComponent("sys").path
        let (source, router, actor) = configurations(broker: broker.port, sysfsRoot: sysfsRoot)
        let routerAgent = try await Executable.start([
            "run", "--config", try scratch.write(router, to: "router.json").path,
        ])
        let actorAgent = try await Executable.start([
            "run", "--config", try scratch.write(actor, to: "actor.json").path,
        ])
        let sourceAgent = try await Executable.start(
            ["run", "--config", try scratch.write(source, to: "source.json").path] + sourceArguments)
        return (sourceAgent, routerAgent, actorAgent)
    }

    private static func configurations(
        broker: Int, sysfsRoot: String
    ) -> (source: String, router: String, actor: String) {
        let communication = #""communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker)"}"#
        let source = """
            {"common": {"agentIdentity": {"name": "source"}, "ioContextNodes": {"\(context)": {"ioSources": [
               {"objectId": "\(sourceId)", "name": "zone 0", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
             \(communication),
             "devices": {"sysfsRoot": "\(sysfsRoot)", "sensors": [
               {"driver": "thermal", "zone": 0, "pollInterval": "100ms",
                "sources": {"temperature": {"ioSource": "\(sourceId)"}}}]}}
            """
        let router = """
            {"common": {"agentIdentity": {"name": "router"}}, \(communication),
             "controllers": {"router": {"type": "ioRouter",
               "ioContext": {"name": "\(context)", "operatingState": "normal"}}}}
            """
        let actor = """
            {"common": {"agentIdentity": {"name": "actor"}, "ioContextNodes": {"\(context)": {"ioActors": [
               {"objectId": "5a1c0000-0000-4000-8000-000000000020", "name": "Display",
                "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
             \(communication), "controllers": {"console": {"type": "console"}}}
            """
        return (source, router, actor)
    }

    static func count(_ text: String, in log: OutputLog) -> Int {
        log.text.components(separatedBy: text).count - 1
    }

    @Test func anActorThatAnswersTheCensusLateAfterABrokerRestartStaysAssociated() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let (sourceAgent, routerAgent, actorAgent) = try await Self.startAgents(broker: broker, in: scratch)
        defer {
            for agent in [routerAgent, actorAgent, sourceAgent] { kill(agent.processIdentifier, SIGCONT) }
        }
        try await actorAgent.line(containing: "Display received", onErrors: true, within: .seconds(60))
        // The router's census of its own start (3 s) is over.
        try await Task.sleep(for: .seconds(4))

        // The router comes back last: held while the broker restarts and the source and the actor reconnect (each
        // advertises its node then, which the router does not hear).
        kill(routerAgent.processIdentifier, SIGSTOP)
        try await broker.kill()
        try await broker.start()
        try await waitUntil("the actor and the source are back", within: .seconds(30)) {
            Self.count("online as actor", in: actorAgent.errors) >= 2
                && Self.count("online as source", in: sourceAgent.errors) >= 2
        }
        // The actor misses the census's first Discover: held until well after its 3 s.
        kill(actorAgent.processIdentifier, SIGSTOP)
        kill(routerAgent.processIdentifier, SIGCONT)
        try await waitUntil("the router is back", within: .seconds(30)) {
            Self.count("online as router", in: routerAgent.errors) >= 2
        }
        try await Task.sleep(for: .seconds(5))
        kill(actorAgent.processIdentifier, SIGCONT)

        // The census asks again (3 s after the first Discover, and answers to the first still count), so the actor
        // is heard of and stays associated: values keep arriving once what waited for it during the hold is read.
        try await Task.sleep(for: .seconds(8))
        let received = Self.count("Display received", in: actorAgent.errors)
        try await waitUntil("fresh values at the actor", within: .seconds(20)) {
            Self.count("Display received", in: actorAgent.errors) >= received + 10
        }
        #expect(Self.count("disassociated", in: routerAgent.errors) == 0, "\(routerAgent.errors.text)")
        #expect(Self.count("Display is not associated", in: actorAgent.errors) == 1, "before the first association")

        for agent in [sourceAgent, actorAgent, routerAgent] { try await agent.stop() }
        try await broker.stop()
    }
}
