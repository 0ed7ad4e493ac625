import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

/// `coaty-edge agents` and `observe` against a fleet simulated by one `coaty-edge-bench fleet` process: more agents
/// than a process once held (180: libmosquitto's select() refused descriptors from 1024 on), which no longer ask
/// each other for their presence when they join.
@Suite struct FleetSimulationTests {
    /// `coaty-edge-bench`, built next to `coaty-edge` (the test target depends on it).
    static let bench = URL(fileURLWithPath: Executable.path).deletingLastPathComponent().appendingPathComponent(
        "coaty-edge-bench"
    ).path

    /// 250 simulated agents (1250 descriptors in one process): `agents` lists every one of them, `observe` sees them
    /// join, and sees the 10 whose connections break off (no DISCONNECT) leave by their last wills; the simulated
    /// agents publish no Discover of their own.
    @Test func theAgentsCommandListsAFleetOfOneSimulationProcess() async throws {
        let broker = try await TestBroker.started()
        let scratch = try ScratchDirectory("coaty-cli")
        let url = ["--broker", "mqtt://127.0.0.1:\(broker.port)"]
        let discovers = try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/+/DSC/+/+"])
        let observe = try await Executable.start(["observe", "--json"] + url)
        // observe is online (it asks who is there) before the fleet starts.
        let observeAsked = try await discovers.nextMessage(timeout: .seconds(60))
        let count = 250
        let trigger = scratch.url.appendingPathComponent("drop").path
        let fleet = try await CoatyTestSupport.ChildProcess(
            Command(
                [
                    Self.bench, "fleet", "--agents", "\(count)", "--name-prefix", "sim", "--context", "Simulated",
                    "--drop", "10",
                    "--drop-when", trigger,
                ] + url))
        let online = try await fleet.line(containing: "online", within: .seconds(120))
        #expect(online.hasPrefix("online \(count) agents in "), "\(online)")
        try await waitForJSONLines(observe, count: count, within: .seconds(60)) {
            $0["event"] as? String == "agentJoined" && ($0["name"] as? String)?.hasPrefix("sim-") == true
        }

        let summary = try await Executable.run(["agents", "--summary", "--name", "sim-*", "--census", "3"] + url)
        #expect(
            summary.outputLines == [
                "\(count) agents: \(count) no-devices",
                "\(count) IO nodes (Simulated \(count)), \(count) sources, 25 actors",
            ],
            "\(summary.output)\(summary.errors)")
        let listed = try await Executable.run(["agents", "--json", "--census", "3"] + url)
        let names = jsonLines(listed.output).compactMap { $0["name"] as? String }.filter { $0.hasPrefix("sim-") }
        #expect(Set(names).count == count, "\(listed.errors)")
        #expect(!listed.errors.contains("incomplete"), "\(listed.errors)")

        // Only observe and the two `agents` asked who is there; the simulated agents did not.
        try await discovers.sync()
        let askers = Set(([observeAsked] + discovers.pendingMessages).map { $0.topic.split(separator: "/")[4] })
        #expect(askers.count <= 3, "\(askers.count) agents published Discover events")

        #expect(FileManager.default.createFile(atPath: trigger, contents: nil))
        try await fleet.line(containing: "dropped 10 connections", within: .seconds(30))
        try await waitForJSONLines(observe, count: 10, within: .seconds(30)) {
            $0["event"] as? String == "agentLeft" && ($0["name"] as? String)?.hasPrefix("sim-") == true
        }
        #expect(try await fleet.stop(with: SIGTERM, within: .seconds(60)).status == 0)
        #expect(try await observe.stop(with: SIGTERM).status == 0)
        _ = try await discovers.disconnect()
        try await broker.stop()
    }
    /// Agents that keep joining during the census keep `agents` waiting, up to four times `--census`; it then says
    /// that the list may be incomplete.
    @Test func agentsSaysWhenAnswersStillArriveAtTheEndOfItsWait() async throws {
        let broker = try await TestBroker.started()
        let peer = try await TestClient.connected(to: broker)
        let joining = Task {
            for index in 0..<1000 where !Task.isCancelled {
                try? peer.publish(
                    "coaty/3/-/ADV:Identity/late-\(index)",
                    #"{"object":{"coreType":"Identity","objectType":"coaty.Identity","objectId":"late-\#(index)","name":"late-\#(index)"}}"#
                )
                // Every 20 ms: the census's last step of a second must see an answer even when the other suites
                // of a full run keep this process's threads busy for a few hundred milliseconds.
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        let started = ContinuousClock.now
        let listed = try await Executable.run([
            "agents", "--summary", "--census", "2", "--broker", "mqtt://127.0.0.1:\(broker.port)",
        ])
        let took = ContinuousClock.now - started
        joining.cancel()
        #expect(listed.status == 0)
        #expect(
            listed.errors.contains("answers were still arriving after 8 s: the list may be incomplete"),
            "\(listed.errors)")
        #expect(took >= .seconds(8))
        _ = try await peer.disconnect()
        try await broker.stop()
    }

    /// An agent that answers for its devices but not with its identity is counted as expected and missing.
    @Test func agentsSaysHowManyAgentsItExpected() async throws {
        let broker = try await TestBroker.started()
        let ghost = try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/+/DSC/+/+"])
        let answering = Task {
            while !Task.isCancelled, let discover = try? await ghost.nextMessage(timeout: .seconds(60)) {
                let levels = discover.topic.split(separator: "/")
                guard levels.count == 6,
                    String(decoding: discover.payload, as: UTF8.self).contains("coaty-edge.DeviceStatus")
                else { continue }
                try? ghost.publish(
                    "coaty/3/-/RSV/ghost/\(levels[5])",
                    #"{"object":{"coreType":"CoatyObject","objectType":"coaty-edge.DeviceStatus","objectId":"ghost-devices","#
                        + #""name":"ghost devices","parentObjectId":"ghost","devices":[]}}"#)
            }
        }
        // A census of 3 s: the ghost answers from this test process, whose threads the other suites of a full run
        // may keep busy for a while.
        let listed = try await Executable.run([
            "agents", "--summary", "--census", "3", "--broker", "mqtt://127.0.0.1:\(broker.port)",
        ])
        answering.cancel()
        #expect(listed.status == 0)
        #expect(listed.output.hasPrefix("0 agents\n"), "\(listed.output)")
        #expect(
            listed.errors.contains(
                "1 agent answered for its devices but not with its identity: expected 1 agent, listed 0"),
            "\(listed.errors)")
        _ = try await ghost.disconnect()
        try await broker.stop()
    }
}
