import CoatyCommunication
import CoatyJSON
import CoatyModel
import Foundation
import Testing

@testable import CoatyEdgeCLI

/// `agents` and `observe` with a thousand agents: filters by name pattern, state, context and IO point, and the
/// summaries that stay a few lines long.
@Suite struct FleetViewTests {
    /// Agent i: "greenhouse-i" (0..<600) in context Greenhouse or "hall-i" in Hall, one thermal source each; every
    /// 100th has a failing device, every 250th has no device status (a Coaty JS agent, say).
    static func fleet(_ count: Int = 1000) -> [AgentCensus.Entry] {
        (0..<count).map { index in
            let name = index < 600 ? String(format: "greenhouse-%03d", index) : String(format: "hall-%03d", index)
            let id = "agent-\(index)"
            let source = IoSource(
                objectId: "source-\(index)", name: "SoC temperature \(index)",
                valueType: "coaty-edge.Temperature[Celsius]")
            var actors: [IoActor] = []
            if index % 50 == 0 {
                actors.append(IoActor(objectId: "fan-\(index)", name: "Fan \(index)", valueType: "coaty-edge.Switch"))
            }
            let node = IoNode(
                contextName: index < 600 ? "Greenhouse" : "Hall", parentObjectId: id, ioSources: [source],
                ioActors: actors)
            let agent = AgentInfo(identity: Identity(objectId: id, name: name), namespace: "-", ioNodes: [node])
            let failing = index % 100 == 0
            let devices: [JSONValue]? =
                index % 250 == 7
                ? nil
                : [
                    failing
                        ? ["label": "thermal zone 0 (cpu-thermal)", "state": "failing", "error": "no device"]
                        : ["label": "thermal zone 0 (cpu-thermal)", "state": "ok"]
                ]
            return AgentCensus.Entry(agent: agent, devices: devices)
        }
    }

    @Test func namePatternsAreShellPatterns() {
        #expect(NamePattern("greenhouse-*").matches("greenhouse-017"))
        #expect(!NamePattern("greenhouse-*").matches("hall-017"))
        #expect(NamePattern("hall-6[0-4]?").matches("hall-640"))
        #expect(!NamePattern("hall-6[0-4]?").matches("hall-650"))
        #expect(NamePattern("Pi").matches("Pi") && !NamePattern("Pi").matches("pi"))
        #expect(NamePattern("a/*").matches("a/b/c"))
    }

    @Test func agentFiltersSelectByNameStateContextAndPoint() {
        let fleet = Self.fleet()
        func count(_ filter: AgentCensus.Filter) -> Int { fleet.filter(filter.admits).count }
        #expect(count(AgentCensus.Filter()) == 1000)
        #expect(count(AgentCensus.Filter(name: NamePattern("greenhouse-*"))) == 600)
        #expect(count(AgentCensus.Filter(state: .failing)) == 10)
        #expect(count(AgentCensus.Filter(state: .noDevices)) == 4)
        #expect(count(AgentCensus.Filter(state: .ok)) == 986)
        #expect(count(AgentCensus.Filter(name: NamePattern("hall-*"), state: .failing)) == 4)
        #expect(count(AgentCensus.Filter(context: "Hall")) == 400)
        #expect(count(AgentCensus.Filter(context: "Nowhere")) == 0)
        #expect(count(AgentCensus.Filter(point: NamePattern("source-17"))) == 1)
        #expect(count(AgentCensus.Filter(point: NamePattern("Fan *"))) == 20)
        #expect(count(AgentCensus.Filter(valueType: "coaty-edge.Switch")) == 20)
        #expect(count(AgentCensus.Filter(context: "Hall", valueType: "coaty-edge.Switch")) == 8)
    }

    @Test func briefIsOneLinePerAgentWithItsStateAndFirstFailingDevice() {
        let fleet = Self.fleet()
        let lines = AgentCensus.brief(fleet).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == 1000)
        #expect(
            lines[0]
                == "failing    greenhouse-000  agent-0  1 source, 1 actor      Greenhouse  thermal zone 0 (cpu-thermal): no device"
        )
        #expect(lines[1] == "ok         greenhouse-001  agent-1  1 source, 0 actors     Greenhouse")
        #expect(lines[7] == "no-devices greenhouse-007  agent-7  1 source, 0 actors     Greenhouse")
        #expect(AgentCensus.brief([]) == "no agents online\n")
    }

    @Test func summaryCountsStatesContextsAndListsTheFirstFailingDevices() {
        let summary = AgentCensus.summary(Self.fleet())
        let lines = summary.split(separator: "\n").map(String.init)
        #expect(lines[0] == "1000 agents: 986 ok, 10 failing, 4 no-devices")
        #expect(lines[1] == "1000 IO nodes (Greenhouse 600, Hall 400), 1000 sources, 20 actors")
        #expect(lines[2] == "10 failing devices:")
        #expect(lines[3] == "  greenhouse-000: thermal zone 0 (cpu-thermal): no device")
        #expect(lines.count == 13)
        let short = AgentCensus.summary(Self.fleet(), failingShown: 3)
        #expect(short.hasSuffix("  greenhouse-200: thermal zone 0 (cpu-thermal): no device\n  and 7 more\n"))
        #expect(AgentCensus.summary([]) == "0 agents\n0 IO nodes, 0 sources, 0 actors\n")
    }

    @Test func observeFiltersByAgentPatternAndSummarisesEachInterval() {
        var model = ObserveModel(filter: ObserveModel.Filter(agent: NamePattern("hall-*")), ownAgentId: "me")
        var reported: [ObserveEvent] = []
        for entry in Self.fleet() {
            reported += model.apply(.joined(entry.agent), at: 1000).events
        }
        #expect(reported.count == 400)
        #expect(
            reported.allSatisfy { if case .agentJoined(let seen) = $0 { seen.name.hasPrefix("hall-") } else { false } })
        // Every source's route is watched, but only the admitted agents' values are reported.
        #expect(model.applyValue(Array("21.5".utf8), on: "coaty/3/-/IOV/source-700", at: 1100) != nil)
        #expect(model.applyValue(Array("21.5".utf8), on: "coaty/3/-/IOV/source-10", at: 1100) == nil)
        let associate = AssociateEvent(
            ioContextName: "Hall", ioSourceId: "source-700", ioActorId: "fan-700",
            associatingRoute: "coaty/3/-/IOV/source-700", updateRate: nil)
        _ = model.apply(associate, routerId: "router", at: 1200)
        var status = CoatyObject(coreType: .coatyObject, objectType: "coaty-edge.DeviceStatus", name: "status")
        status.parentObjectId = "agent-900"
        status["devices"] = [["label": "thermal zone 0", "state": "failing", "error": "no device"]]
        #expect(model.apply(deviceStatus: status, from: "agent-900", at: 1300) != nil)
        var elsewhere = status
        elsewhere.parentObjectId = "agent-100"
        #expect(model.apply(deviceStatus: elsewhere, from: "agent-100", at: 1300) == nil)
        _ = model.apply(.left(Self.fleet()[999].agent), at: 1400)
        _ = model.apply(.left(Self.fleet()[0].agent), at: 1400)

        let summary = model.summary()
        #expect(
            summary
                == ObserveModel.Summary(
                    agents: 399, joined: 400, left: 1, sources: 399, routedSources: 1, values: 1, failingAgents: 1))
        #expect(
            summary.line(time: "12:00:05", seconds: 5)
                == "12:00:05  399 agents (+400 joined, -1 left), 399 sources (1 routed), 0.2 values/s, 1 agents with failing devices"
        )
        // The next interval starts from zero.
        #expect(
            model.summary()
                == ObserveModel.Summary(
                    agents: 399, joined: 0, left: 0, sources: 399, routedSources: 1, values: 0, failingAgents: 1))
    }
}
