import CoatyCommunication
import CoatyEdgeCLI
import CoatyModel
import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// Real `coaty-edge run` agents with sysfs thermal zones written by the test: across bridged site brokers, with the
/// fleet filters and summaries of `agents` and `observe`, and the start-up check of dotted topic levels.
@Suite struct FleetCommandTests {
    /// An agent with one thermal zone; without `millidegrees` the zone's file is missing and the device fails.
    static func thermalAgent(
        _ name: String, id: String, broker: TestBroker, scratch: ScratchDirectory, context: String = "Greenhouse",
        millidegrees: Int?
    )
        throws -> String
    {
        let zone = "\(name)/sys/class/thermal/thermal_zone0"
        try scratch.write("cpu-thermal\n", to: "\(zone)/type")
        if let millidegrees { try scratch.write("\(millidegrees)\n", to: "\(zone)/temp") }
        return try scratch.write(
            """
            {
              "common": {"agentIdentity": {"name": "\(name)", "objectId": "\(id)"}, "ioContextNodes": {"\(context)": {"ioSources": [
                {"objectId": "\(id)-soc", "name": "SoC temperature of \(name)", "valueType": "coaty-edge.Temperature[Celsius]"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker.port)"},
              "devices": {"sysfsRoot": "\(scratch.url.appendingPathComponent("\(name)/sys").path)", "sensors": [
                {"driver": "thermal", "zone": 0, "pollInterval": "1s", "retry": {"min": "1s", "max": "2s"},
                 "sources": {"temperature": {"ioSource": "\(id)-soc"}}}]}
            }
            """, to: "\(name).json"
        ).path
    }

    static let probeOK = "the broker delivers topic levels with dots"
    static let probeWarning = "the broker did not deliver this agent's own message on coaty/3/-/CHN:coaty-edge.probe."

    /// An agent on site A and one on site B, watched from the central broker: `agents` there lists both, the one on
    /// site A killed with SIGKILL is reported gone by `observe` on the central broker (its last will crossed the
    /// bridge) and no longer listed by `agents` on site B. Neither agent warns about dotted topic levels.
    @Test func aKilledAgentOnOneSiteIsSeenGoneAcrossTheBridges() async throws {
        let brokers = try await BridgedBrokers.started(sites: 2)
        let scratch = try ScratchDirectory("coaty-cli")
        let greenhouse = try await Executable.start([
            "run", "--config",
            try Self.thermalAgent(
                "greenhouse-a", id: "0a0a0a0a-0000-4000-8000-00000000000a", broker: brokers.sites[0], scratch: scratch,
                millidegrees: 41000),
        ])
        let hall = try await Executable.start([
            "run", "--config",
            try Self.thermalAgent(
                "hall-b", id: "0b0b0b0b-0000-4000-8000-00000000000b", broker: brokers.sites[1], scratch: scratch,
                context: "Hall", millidegrees: 39000),
        ])
        let central = ["--broker", "mqtt://127.0.0.1:\(brokers.central.port)"]
        let observe = try await Executable.start(["observe", "--json"] + central)
        try await waitForJSONLines(observe, count: 2, within: .seconds(60)) { $0["event"] as? String == "agentJoined" }

        let listed = try await Executable.run(["agents", "--json", "--census", "2"] + central)
        #expect(
            jsonLines(listed.output).compactMap { $0["name"] as? String } == ["greenhouse-a", "hall-b"],
            "\(listed.output)")
        let brief = try await Executable.run(["agents", "--brief", "--name", "green*", "--census", "2"] + central)
        #expect(
            brief.outputLines == [
                "ok         greenhouse-a  0a0a0a0a-0000-4000-8000-00000000000a  1 source, 0 actors     Greenhouse"
            ])

        let killed = try await greenhouse.stop(with: SIGKILL)
        #expect(killed.status == 128 + SIGKILL)
        let left = try await observe.line(containing: #""event":"agentLeft""#, within: .seconds(30))
        #expect(jsonLines(left).first?["name"] as? String == "greenhouse-a")
        let siteB = try await Executable.run([
            "agents", "--summary", "--census", "2", "--broker", "mqtt://127.0.0.1:\(brokers.sites[1].port)",
        ])
        #expect(siteB.outputLines == ["1 agent: 1 ok", "1 IO node (Hall 1), 1 source, 0 actors"], "\(siteB.output)")

        let stopped = try await hall.stop(with: SIGTERM)
        #expect(stopped.status == 0)
        for errors in [killed.errors, stopped.errors] {
            #expect(errors.contains(Self.probeOK), "\(errors)")
            #expect(!errors.contains(Self.probeWarning))
        }
        #expect(try await observe.stop(with: SIGTERM).status == 0)
        try await brokers.stop()
    }

    /// Filters and summaries against running agents: one whose thermal zone file is missing is `failing`. (The
    /// agents' objectIds differ in their first characters: Coaty's MQTT client id is made of them.)
    @Test func agentsFiltersAndSummariesAgainstRunningAgents() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        var agents: [CoatyTestSupport.ChildProcess] = []
        for (index, name) in ["pi-01", "pi-02", "pi-03"].enumerated() {
            let config = try Self.thermalAgent(
                name, id: "0c0c0c0\(index)-0000-4000-8000-00000000000\(index)", broker: broker, scratch: scratch,
                millidegrees: index == 1 ? nil : 40000)
            agents.append(try await Executable.start(["run", "--config", config]))
        }
        let url = ["--broker", "mqtt://127.0.0.1:\(broker.port)", "--census", "2"]
        // The failing zone is reported once the agent has tried it.
        try await waitUntil("three agents, one failing", within: .seconds(60)) {
            try await Executable.run(["agents", "--summary"] + url).output.hasPrefix("3 agents: 2 ok, 1 failing\n")
        }
        let summary = try await Executable.run(["agents", "--summary"] + url)
        let missing = scratch.url.appendingPathComponent("pi-02/sys/class/thermal/thermal_zone0/temp").path
        #expect(
            summary.outputLines == [
                "3 agents: 2 ok, 1 failing", "3 IO nodes (Greenhouse 3), 3 sources, 0 actors", "1 failing device:",
                "  pi-02: thermal zone 0 (cpu-thermal): no device: \(missing)",
            ])
        let failing = try await Executable.run(["agents", "--brief", "--state", "failing"] + url)
        #expect(failing.outputLines.count == 1)
        #expect(
            failing.outputLines.first?.hasPrefix(
                "failing    pi-02  0c0c0c01-0000-4000-8000-000000000001  1 source, 0 actors") == true)
        let byPoint = try await Executable.run(["agents", "--json", "--point", "SoC temperature of pi-0[13]"] + url)
        #expect(jsonLines(byPoint.output).compactMap { $0["name"] as? String } == ["pi-01", "pi-03"])
        let none = try await Executable.run(["agents", "--name", "hall-*"] + url)
        #expect(none.output == "no agents match (3 agents online)\n")
        let wrong = try await Executable.run(["agents", "--state", "broken"] + url)
        #expect(wrong.status == 64)
        #expect(wrong.errors.contains("broken"))

        let summaries = try await Executable.start(
            [
                "observe", "--summary", "--every", "1", "--agent", "pi-0[12]", "--broker",
                "mqtt://127.0.0.1:\(broker.port)",
            ])
        let line = try await summaries.line(containing: "2 agents (", within: .seconds(30))
        #expect(line.contains(" 2 sources ("), "\(line)")
        try await summaries.line(containing: "1 agents with failing devices", within: .seconds(30))
        #expect(try await summaries.stop(with: SIGTERM).status == 0)
        for agent in agents { _ = try await agent.stop(with: SIGTERM) }
        try await broker.stop()
    }

    /// The presence of `agents` and `observe` keeps a fleet larger than an agent's default bound (1024 agents): the
    /// 1500 identities and IO nodes advertised here are all kept, none refused.
    @Test func theCommandLinePresenceKeepsMoreThanAThousandAgents() async throws {
        let broker = try await TestBroker.started()
        let session = ClientSession(options: CommunicationOptions(port: broker.port), censusTimeout: .milliseconds(200))
        let tracking = Task { await session.presence.run() }
        session.manager.start()
        try await waitUntil("the session to be online") { session.presence.agents.count == 1 }
        let peer = try await TestClient.connected(to: broker)
        try await peer.sync()
        let count = 1500
        for index in 0..<count {
            try peer.publish(
                "coaty/3/-/ADV:Identity/agent-\(index)",
                #"{"object":{"coreType":"Identity","objectType":"coaty.Identity","objectId":"agent-\#(index)","name":"pi-\#(index)"}}"#
            )
            try peer.publish(
                "coaty/3/-/ADV:IoNode/agent-\(index)",
                #"{"object":{"coreType":"IoNode","objectType":"coaty.IoNode","objectId":"node-\#(index)","name":"Fleet","#
                    + #""ioSources":[{"coreType":"IoSource","objectType":"coaty.IoSource","objectId":"source-\#(index)","#
                    + #""name":"SoC","valueType":"t"}],"ioActors":[]}}"#)
            if index % 100 == 99 { try await peer.sync() }
        }
        try await waitUntil("all \(count) agents and their nodes", within: .seconds(60)) {
            session.presence.agents.filter { $0.ioNodes.count == 1 }.count == count
        }
        #expect(session.presence.refusedCount == 0)
        let entries = session.presence.agents.filter { $0.name.hasPrefix("pi-") }.map {
            AgentCensus.Entry(agent: $0, devices: nil)
        }
        #expect(
            AgentCensus.summary(entries).hasPrefix(
                "1500 agents: 1500 no-devices\n1500 IO nodes (Fleet 1500), 1500 sources, 0 actors\n"))
        tracking.cancel()
        await session.manager.stop()
        await tracking.value
        _ = try await peer.disconnect()
        try await broker.stop()
    }

    /// A broker that does not deliver the agent's dotted probe (here an ACL denies its topic, as RabbitMQ's MQTT
    /// plugin loses dotted levels) gets a warning that names the cause, once.
    @Test func anAgentWarnsWhenTheBrokerDropsDottedTopicLevels() async throws {
        let id = "0d0d0d0d-0000-4000-8000-00000000000d"
        let broker = try await TestBroker.started(
            TestBroker.Options(
                acl: """
                    topic readwrite #
                    topic deny coaty/3/-/CHN:coaty-edge.probe.\(id)/#
                    """))
        let scratch = try ScratchDirectory("coaty-cli")
        let agent = try await Executable.start([
            "run", "--config",
            try Self.thermalAgent("deaf", id: id, broker: broker, scratch: scratch, millidegrees: 40000),
        ])
        let warning = try await agent.line(containing: Self.probeWarning, onErrors: true, within: .seconds(60))
        #expect(warning.contains(" warning "), "\(warning)")
        #expect(warning.contains("RabbitMQ's MQTT plugin"))
        let stopped = try await agent.stop(with: SIGTERM)
        #expect(stopped.status == 0)
        #expect(!stopped.errors.contains(Self.probeOK))
        #expect(stopped.errors.components(separatedBy: Self.probeWarning).count == 2)
        try await broker.stop()
    }
}
