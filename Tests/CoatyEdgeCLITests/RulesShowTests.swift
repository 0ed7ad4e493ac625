import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyModel
import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

@testable import CoatyEdgeCLI

/// `coaty-edge rules show` against a `coaty-edge run` router: a few associations are listed as they always were; at
/// 10,000 associations (about 3 MB of JSON, more than a client's inbound limit of 256 KiB) it prints the counts per
/// rule and value type, lists pages and filtered views, and `--all` reads every page, each answer well below the
/// limit; a Call without parameters, as older versions send it, gets the first page.
@Suite(.serialized) struct RulesShowTests {
    static let context = "Hall"
    static let sourceNodes = 1000
    static let sourcesPerNode = 10
    static let valueTypes = 100

    static func router(broker: Int, rules: String) -> String {
        """
        {"common": {"agentIdentity": {"name": "Hall router"}},
         "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker)"},
         "controllers": {"router": {"type": "ioRouter", "rules": "\(rules)", "ioContext": {"name": "\(context)"}}}}
        """
    }

    /// The sources of even nodes by one rule, the others by the second.
    static let rules = """
        {"rules": [
          {"name": "even-nodes", "valueType": "*", "condition": {"==": [{"var": "sourceNode.characteristics.even"}, true]}},
          {"name": "other-nodes", "valueType": "*", "condition": {"==": [1, 1]}}]}
        """

    static func valueType(node: Int, source: Int) -> String { "scale.\((node * sourcesPerNode + source) % valueTypes)" }

    /// Node i of agent "agent-i" has the sources "source i.j" (objectId source-i-j) of value type
    /// scale.((10 i + j) mod 100); node "displays-k" of agent "display-k" has the one actor "display k" of value type
    /// scale.k: every source pairs with exactly one actor, 10,000 associations.
    static func advertisements() -> String {
        var lines: [String] = []
        for node in 0..<sourceNodes {
            let sources = (0..<sourcesPerNode).map { source in
                #"{"coreType":"IoSource","objectType":"coaty.IoSource","objectId":"source-\#(node)-\#(source)","#
                    + #""name":"source \#(node).\#(source)","valueType":"\#(valueType(node: node, source: source))"}"#
            }
            lines.append(
                #"{"object":{"coreType":"IoNode","objectType":"coaty.IoNode","objectId":"node-\#(node)","name":"\#(context)","#
                    + #""parentObjectId":"agent-\#(node)","ioSources":[\#(sources.joined(separator: ","))],"ioActors":[],"#
                    + #""characteristics":{"even":\#(node % 2 == 0)}}}"#)
        }
        for actor in 0..<valueTypes {
            lines.append(
                #"{"object":{"coreType":"IoNode","objectType":"coaty.IoNode","objectId":"displays-\#(actor)","name":"\#(context)","#
                    + #""parentObjectId":"display-\#(actor)","ioSources":[],"ioActors":[{"coreType":"IoActor","#
                    + #""objectType":"coaty.IoActor","objectId":"actor-\#(actor)","name":"display \#(actor)","#
                    + #""valueType":"scale.\#(actor)"}]}}"#)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Every pair as "sourceId>actorId".
    static let expectedPairs: Set<String> = Set(
        (0..<sourceNodes).flatMap { node in
            (0..<sourcesPerNode).map { source in
                "source-\(node)-\(source)>actor-\((node * sourcesPerNode + source) % valueTypes)"
            }
        })

    static func pairs(_ associations: [[String: Any]]) -> [String] {
        associations.map { "\($0["sourceId"] as? String ?? "?")>\($0["actorId"] as? String ?? "?")" }
    }

    static func show(_ arguments: [String], broker: Int) async throws -> CommandResult {
        try await Executable.run(
            ["rules", "show", "--broker", "mqtt://127.0.0.1:\(broker)", "--timeout", "2"] + arguments)
    }

    /// The one router's answer of `rules show --json ARGUMENTS`.
    static func answer(_ arguments: [String], broker: Int) async throws -> [String: Any] {
        let result = try await show(arguments + ["--json"], broker: broker)
        #expect(result.status == 0, "\(arguments): \(result.errors)")
        let lines = jsonLines(result.output)
        #expect(lines.count == 1, "\(arguments): \(result.output.prefix(500))")
        return lines.first ?? [:]
    }

    /// The router's count of the associations `rules show --json ARGUMENTS` matches; nil while no router answers.
    static func matched(_ arguments: [String], broker: Int) async throws -> Int? {
        let result = try await show(arguments + ["--json"], broker: broker)
        return jsonLines(result.output).first?["matched"] as? Int
    }

    /// Asks as versions before paging did: the Call without parameters, over a client with the default inbound limit.
    static func unparameterisedAnswer(broker: Int) async throws -> (size: Int, result: JSONValue?) {
        guard case .result(let result) = try await call(nil, broker: broker)?.outcome else { return (0, nil) }
        return (result.serializedBytes().count, result)
    }

    /// The router's Return to a Call with these parameters.
    static func call(_ parameters: JSONValue?, broker: Int) async throws -> ReturnEvent? {
        var options = CommunicationOptions()
        options.host = "127.0.0.1"
        options.port = broker
        let session = ClientSession(options: options)
        return try await session.run(connectTimeout: .seconds(20)) { session in
            let call = CallEvent(operation: IoRouter.associationsOperation, parameters: parameters)
            for await returned in try session.manager.publishCall(call, timeout: .seconds(5)) { return returned.event }
            return nil
        }
    }

    @Test func fewAssociationsAreListedAsBeforeAndTenThousandInSummaryPagesAndFilters() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let rules = try scratch.write(Self.rules, to: "rules.json").path
        let router = try await Executable.start([
            "run", "--config",
            try scratch.write(Self.router(broker: broker.port, rules: rules), to: "router.json").path,
        ])
        let display = try await Executable.start([
            "run", "--config",
            try scratch.write(
                """
                {"common": {"agentIdentity": {"name": "hall-display"},
                  "ioContextNodes": {"\(Self.context)": {"ioActors": [{"objectId": "small-actor", "name": "Small display", "valueType": "small.T"}]}}},
                 "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker.port)"}}
                """, to: "display.json"
            ).path,
        ])
        let small =
            #"{"object":{"coreType":"IoNode","objectType":"coaty.IoNode","objectId":"small-node","name":"\#(Self.context)","#
            + #""parentObjectId":"small-agent","ioSources":[{"coreType":"IoSource","objectType":"coaty.IoSource","#
            + #""objectId":"small-a","name":"Boiler","valueType":"small.T","updateRate":500},{"coreType":"IoSource","#
            + #""objectType":"coaty.IoSource","objectId":"small-b","name":"Oven","valueType":"small.T"}],"ioActors":[]}}"#
        let smallFile = try scratch.write(small + "\n", to: "small.txt").path
        try await waitUntil("the router associates the small node", within: .seconds(60)) {
            _ = try await Command(
                "sh", "-c",
                "mosquitto_pub -l -h 127.0.0.1 -p \(broker.port) -t coaty/3/-/ADV:IoNode/small < \(smallFile)"
            ).run()
            return try await Self.matched([], broker: broker.port) == 2
        }

        // A few associations: the list as before, and the same with the older request form.
        let listed = try await Self.show([], broker: broker.port)
        #expect(listed.status == 0)
        #expect(listed.outputLines.count == 3, "\(listed.output)")
        #expect(listed.outputLines.first?.hasPrefix("router Hall router (") == true)
        #expect(listed.outputLines.first?.hasSuffix("): context Hall, version 0") == true)
        #expect(listed.outputLines.dropFirst().first == "  Boiler → Small display  rule other-nodes, rate 500 ms")
        #expect(listed.outputLines.dropFirst(2).first == "  Oven   → Small display  rule other-nodes")
        let old = try await Self.unparameterisedAnswer(broker: broker.port)
        let oldAssociations = old.result?["associations"]?.arrayValue ?? []
        #expect(oldAssociations.map { $0["sourceName"]?.stringValue } == ["Boiler", "Oven"])
        #expect(oldAssociations.first?["route"]?.stringValue == "coaty/3/-/IOV/small-a")
        #expect(old.result?["context"]?["name"]?.stringValue == Self.context)
        #expect(old.result?["nextOffset"] == nil)
        // Parameters the router does not understand: Coaty's "Invalid params", with the reason.
        let refused = try await Self.call(.object(["limit": .number(-1)]), broker: broker.port)
        #expect(refused?.outcome == ReturnEvent.invalidParameters)
        #expect(
            refused?.executionInfo?["reason"]?.stringValue?.contains("$.limit") == true,
            "\(String(describing: refused))")
        // By agent name: the display agent answers the census.
        let byAgent = try await Self.answer(["--agent", "hall-*"], broker: broker.port)
        #expect(
            (byAgent["associations"] as? [[String: Any]]).map(Self.pairs) == [
                "small-a>small-actor", "small-b>small-actor",
            ])
        let byOtherAgent = try await Self.answer(["--agent", "kitchen-*"], broker: broker.port)
        #expect(byOtherAgent["matched"] as? Int == 0)
        #expect(byOtherAgent["total"] as? Int == 2)
        _ = try await display.stop()

        // 10,000 associations.
        let flood = try scratch.write(Self.advertisements(), to: "nodes.txt").path
        let published = try await Command(
            "sh", "-c", "mosquitto_pub -l -h 127.0.0.1 -p \(broker.port) -t coaty/3/-/ADV:IoNode/bench < \(flood)"
        )
        .run(timeout: .seconds(120))
        #expect(published.status == 0, "\(published.errors)")
        try await waitUntil("10,000 associations", within: .seconds(300)) {
            try await Self.matched(["--summary"], broker: broker.port) == 10_000
        }

        // By default the counts, and the first page for scripts; every answer below 64 KiB.
        let summary = try await Self.show([], broker: broker.port)
        #expect(summary.status == 0)
        let text = summary.output
        #expect(text.contains("\n  10000 associations: 10000 sources, 100 actors, 1100 agents\n"), "\(text)")
        #expect(text.contains("\n  by rule:\n    even-nodes   5000\n    other-nodes  5000\n"), "\(text)")
        #expect(text.contains("\n  by value type:\n    scale.0   100\n    scale.1   100\n"), "\(text)")
        #expect(text.contains("\n    and 90 more value types with 9000\n"), "\(text)")
        #expect(
            text.contains(
                "\n  100 a page: --page 1 to 100, or --all; --rule, --source, --actor and --agent narrow them\n"),
            "\(text)")
        #expect(summary.outputLines.count < 30)
        let first = try await Self.show(["--json"], broker: broker.port)
        #expect(first.output.utf8.count < IoAssociationReport.maximumAnswerBytes)
        let firstAnswer = try #require(jsonLines(first.output).first)
        #expect((firstAnswer["associations"] as? [Any])?.count == 100)
        #expect(firstAnswer["nextOffset"] as? Int == 100)
        #expect(firstAnswer["total"] as? Int == 10_000)

        // The older request form gets the first associations that fit into one answer, no longer nothing.
        let unparameterised = try await Self.unparameterisedAnswer(broker: broker.port)
        #expect(unparameterised.size < IoAssociationReport.maximumAnswerBytes)
        let firstOld = unparameterised.result?["associations"]?.arrayValue ?? []
        #expect(firstOld.count > 100)
        #expect(unparameterised.result?["nextOffset"]?.intValue == firstOld.count)

        // All of them: --all, and the pages one by one, each the full set.
        let all = try await Self.answer(["--all"], broker: broker.port)
        let allPairs = Self.pairs(all["associations"] as? [[String: Any]] ?? [])
        #expect(allPairs.count == 10_000)
        #expect(Set(allPairs) == Self.expectedPairs)
        #expect(all["nextOffset"] == nil)
        var paged: [String] = []
        for page in 1...6 {
            let answer = try await Self.answer(["--page", "\(page)", "--limit", "2000"], broker: broker.port)
            #expect(answer["offset"] as? Int == (page - 1) * 2000)
            paged += Self.pairs(answer["associations"] as? [[String: Any]] ?? [])
        }
        #expect(paged == allPairs)
        let third = try await Self.show(["--page", "3", "--limit", "20"], broker: broker.port)
        #expect(third.outputLines.dropFirst().first == "  associations 41-60 of 10000 (page 3 of 500)")
        #expect(third.outputLines.count == 22)
        #expect(third.outputLines.dropFirst(2).first?.hasPrefix("  source ") == true)

        // Filtered views: by source name, rule, actor and agent, each alone and together.
        let bySource = try await Self.show(["--source", "source 7.*"], broker: broker.port)
        #expect(bySource.outputLines.dropFirst().first == "  10 associations of 10000 match")
        #expect(bySource.outputLines.count == 12)
        #expect(bySource.output.contains("  source 7.3 → display 73  rule other-nodes\n"), "\(bySource.output)")
        let byRule = try await Self.answer(["--rule", "even-*", "--summary"], broker: broker.port)
        #expect(byRule["matched"] as? Int == 5000)
        let byActor = try await Self.answer(["--actor", "display 1?", "--summary"], broker: broker.port)
        #expect(byActor["matched"] as? Int == 1000)
        #expect(((byActor["summary"] as? [String: Any])?["valueTypes"] as? [Any])?.count == 10)
        let byActorId = try await Self.answer(["--actor", "actor-42", "--all"], broker: broker.port)
        #expect(
            Set(Self.pairs(byActorId["associations"] as? [[String: Any]] ?? []))
                == Self.expectedPairs.filter { $0.hasSuffix(">actor-42") })
        let bySourceAgent = try await Self.answer(["--agent", "agent-3"], broker: broker.port)
        #expect(
            Self.pairs(bySourceAgent["associations"] as? [[String: Any]] ?? [])
                == (0..<10).map { "source-3-\($0)>actor-\(30 + $0)" })
        let together = try await Self.answer(["--agent", "display-5", "--rule", "even-nodes"], broker: broker.port)
        #expect(together["matched"] as? Int == 100)
        let none = try await Self.answer(["--agent", "display-5", "--rule", "other-nodes"], broker: broker.port)
        #expect(none["matched"] as? Int == 0)

        // `observe` shows every association the router made before it started, not only the first answer's.
        let observe = try await Executable.start(["observe", "--json", "--broker", "mqtt://127.0.0.1:\(broker.port)"])
        let observed = try await waitForJSONLines(observe, count: 10_000, within: .seconds(120)) {
            $0["event"] as? String == "associated"
        }
        let observedPairs = Set(
            observed.filter { $0["event"] as? String == "associated" }.map {
                "\($0["sourceId"] as? String ?? "?")>\($0["actorId"] as? String ?? "?")"
            })
        #expect(observedPairs == Self.expectedPairs)
        #expect(try await observe.stop(with: SIGTERM).status == 0)

        let badLimit = try await Self.show(["--limit", "0"], broker: broker.port)
        #expect(badLimit.status == 64)
        let both = try await Self.show(["--all", "--page", "2"], broker: broker.port)
        #expect(both.status == 64)
        _ = try await router.stop()
        try await broker.stop()
    }
}
