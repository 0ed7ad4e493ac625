import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// A `coaty-edge run` router flooded with 10,000 IoNode advertisements by one `mosquitto_pub -l`, as any client
/// with write access to the namespace can: it keeps answering `rules show` within a second while it works, refuses
/// the nodes past its limit with a count and a log line, associates what its rules accept, and a SIGTERM during a
/// second flood ends it promptly. (Its speed at fleet scale is measured by Tests/Tools/router-scale.py.)
@Suite(.serialized) struct RouterFloodTests {
    static let context = "Board"
    static let nodes = 10_000
    /// Of the nodes the router takes (`IoRouter.defaultNodeLimit`, 4096), those whose source the rule accepts.
    static let watchedEvery = 500

    static func router(broker: Int, rules: String) -> String {
        """
        {"common": {"agentIdentity": {"name": "Router"}},
         "communication": {"brokerUrl": "mqtt://127.0.0.1:\(broker)"},
         "controllers": {"router": {"type": "ioRouter", "rules": "\(rules)",
           "ioContext": {"name": "\(context)", "operatingState": "normal"}}}}
        """
    }

    /// A source of a watched node goes to the actors responsible for the context's operating state; every pair of
    /// a value type is evaluated.
    static let rules = """
        {"rules": [{"name": "watched", "valueType": "*", "condition": {"and": [
          {"==": [{"var": "sourceNode.characteristics.watched"}, true]},
          {"==": [{"var": "actorNode.characteristics.isResponsibleForOperatingState"}, {"var": "context.operatingState"}]}]}}]}
        """

    /// One Advertise payload per line: node i has a source and an actor of value type `flood.<i mod 100>`, so that
    /// each value type has about 40 sources and 40 actors among the nodes the router takes: some 160,000 pairs.
    static func advertisements(generation: Int) -> String {
        (0..<nodes).map { index in
            let state = index % 2 == 0 ? "normal" : "emergency"
            let valueType = "flood.\(index % 100)"
            return
                #"{"object":{"coreType":"IoNode","objectType":"coaty.IoNode","objectId":"node-\#(index)","name":"\#(context)","#
                + #""parentObjectId":"agent-\#(index)","ioSources":[{"coreType":"IoSource","objectType":"coaty.IoSource","#
                + #""objectId":"source-\#(index)","name":"source \#(index)","valueType":"\#(valueType)"}],"#
                + #""ioActors":[{"coreType":"IoActor","objectType":"coaty.IoActor","objectId":"actor-\#(index)","#
                + #""name":"actor \#(index)","valueType":"\#(valueType)"}],"characteristics":{"watched":\#(index % watchedEvery == 0),"#
                + #""isResponsibleForOperatingState":"\#(state)","generation":\#(generation)}}}"#
        }.joined(separator: "\n") + "\n"
    }

    static func flood(broker: Int, file: String) async throws -> CoatyTestSupport.ChildProcess {
        try await CoatyTestSupport.ChildProcess(
            Command("sh", "-c", "mosquitto_pub -l -h 127.0.0.1 -p \(broker) -t coaty/3/-/ADV:IoNode/flood < \(file)"))
    }

    /// `rules show` with a one-second limit on the answer (from its Call to the router's Return); the router's
    /// count of its associations (by default it lists at most a page of them).
    static func rulesShow(broker: Int) async throws -> (status: Int32, associations: Int) {
        let result = try await Executable.run(
            ["rules", "show", "--broker", "mqtt://127.0.0.1:\(broker)", "--timeout", "1", "--json"],
            timeout: .seconds(60))
        let answer = jsonLines(result.output).first
        return (result.status, answer?["matched"] as? Int ?? -1)
    }

    @Test func aFloodOfNodesLeavesTheRouterAnsweringAndStoppable() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let rules = try scratch.write(Self.rules, to: "rules.json").path
        let router = try await Executable.start([
            "run", "--config",
            try scratch.write(Self.router(broker: broker.port, rules: rules), to: "router.json").path,
        ])
        try await waitUntil("the router answers", within: .seconds(60)) {
            try await Self.rulesShow(broker: broker.port).status == 0
        }

        // The flood. The router's connection delivers the Call of `rules show` after the advertisements before it,
        // so the first answer waits for their decoding (a debug build on a loaded machine takes seconds for that);
        // from then on, while the router evaluates the pairs, each `rules show` is answered within its second.
        let first = try scratch.write(Self.advertisements(generation: 1), to: "flood-1.txt").path
        let flood = try await Self.flood(broker: broker.port, file: first)
        _ = try await flood.finished(within: .seconds(60))
        try await waitUntil("an answer after the flood", within: .seconds(90)) {
            try await Self.rulesShow(broker: broker.port).status == 0
        }
        var answers: [Int] = []
        for _ in 0..<3 {
            let (status, associations) = try await Self.rulesShow(broker: broker.port)
            #expect(status == 0, "no answer within a second after the flood")
            answers.append(associations)
        }

        // It takes 4096 nodes and refuses the rest with a count and a log line; it associates the sources of the
        // watched nodes with the actors of their value type responsible for "normal".
        try await router.line(
            containing: "IO router \(Self.context) is full: refused IO node", onErrors: true, within: .seconds(60))
        let watchedSources = (0..<4096).filter { $0 % Self.watchedEvery == 0 }
        let expected = watchedSources.reduce(0) { count, index in
            count + (0..<4096).filter { $0 % 100 == index % 100 && $0 % 2 == 0 }.count
        }
        try await waitUntil("the router associates every accepted pair", within: .seconds(120)) {
            try await Self.rulesShow(broker: broker.port).associations == expected
        }
        #expect(answers.allSatisfy { $0 <= expected })

        // A second flood changes every node the router manages (all their pairs are evaluated again); SIGTERM in the
        // middle of it ends the router promptly, with its associations ended (the routed actors disassociated).
        let second = try scratch.write(Self.advertisements(generation: 2), to: "flood-2.txt").path
        let again = try await Self.flood(broker: broker.port, file: second)
        try await Task.sleep(for: .milliseconds(300))
        let signalled = ContinuousClock.now
        let stopped = try await router.stop(with: SIGTERM, within: .seconds(30))
        let stopTime = ContinuousClock.now - signalled
        _ = try? await again.finished(within: .seconds(60))
        #expect(stopped.status == 0, "\(stopped.errors.suffix(2000))")
        // The limit of the production target (a second) with room for a loaded machine and a debug build.
        #expect(stopTime < .seconds(5), "the router took \(stopTime) to stop")
        #expect(stopped.errors.contains("disassociated"))
        try await broker.stop()
    }
}
