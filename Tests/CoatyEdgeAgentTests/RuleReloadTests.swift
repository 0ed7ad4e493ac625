import CoatyIORouting
import CoatyJSON
import CoatyMQTT
import CoatyRuntime
import CoatyTestSupport
import Foundation
import MQTTTestSupport
import Testing

@testable import CoatyEdgeAgent

/// Rule files edited while the agent runs: the router follows them without a restart, and only the
/// associations that change cause Associate traffic. A broken edit leaves the last good rules in force.
@Suite struct RuleReloadTests {
    static func rule(_ name: String, source: String, actor: String) -> String {
        #"{"name": "\#(name)", "valueType": "t", "condition": {"and": [{"==": [{"var": "source.name"}, "\#(source)"]}, {"==": [{"var": "actor.name"}, "\#(actor)"]}]}}"#
    }

    static func rules(_ rules: String...) -> String { #"{"rules": [\#(rules.joined(separator: ", "))]}"# }

    @Test func editedRulesChangeOnlyWhatChanged() async throws {
        let broker = try await TestBroker.started()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coaty-reload-\(UUID().uuidString)")
        let rulesDirectory = directory.appendingPathComponent("rules")
        try FileManager.default.createDirectory(at: rulesDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let rulesFile = rulesDirectory.appendingPathComponent("routing.json")
        func write(_ text: String) throws {
            // As editors save: a new file renamed over the old one.
            let temporary = rulesDirectory.appendingPathComponent(".routing.json.swp")
            try Data(text.utf8).write(to: temporary)
            _ = rename(temporary.path, rulesFile.path)
        }
        try write(Self.rules(Self.rule("first", source: "s1", actor: "a1")))
        let configuration = #"""
            {
              "common": {"agentIdentity": {"name": "reloading"}, "ioContextNodes": {"ctx": {
                "ioSources": [{"objectId": "s1", "name": "s1", "valueType": "t"}, {"objectId": "s2", "name": "s2", "valueType": "t"}],
                "ioActors": [{"objectId": "a1", "name": "a1", "valueType": "t"}, {"objectId": "a2", "name": "a2", "valueType": "t"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"},
              "controllers": {"router": {"type": "ioRouter", "ioContext": {"name": "ctx"}, "rules": "rules"}}
            }
            """#
        let configFile = directory.appendingPathComponent("agent.json")
        try Data(configuration.utf8).write(to: configFile)
        let sniffer = try await TestClient.connected(to: broker, subscribingTo: ["coaty/3/-/ASC:ctx/+"])
        let agent = try await EdgeAgent.make(try AgentConfiguration.load(file: configFile.path))
        let router = try #require(agent.controller(named: "router", as: IoRouter.self))
        agent.start()

        func associations() -> Set<String> {
            Set(router.associations.map { "\($0.sourceId)>\($0.actorId) by \($0.rule)" })
        }
        func nextAssociate() async throws -> String {
            let message = try await sniffer.nextMessage(timeout: .seconds(30))
            let event = try JSONValue(parsing: message.payload)
            let pair = "\(event["ioSourceId"]?.stringValue ?? "")>\(event["ioActorId"]?.stringValue ?? "")"
            return event["associatingRoute"] == nil ? "-" + pair : "+" + pair
        }
        #expect(try await nextAssociate() == "+s1>a1")
        #expect(associations() == ["s1>a1 by first"])

        try write(
            Self.rules(Self.rule("first", source: "s1", actor: "a1"), Self.rule("second", source: "s2", actor: "a2")))
        #expect(try await nextAssociate() == "+s2>a2")
        #expect(associations() == ["s1>a1 by first", "s2>a2 by second"])

        // A broken edit is refused; the router keeps routing by the last good rules.
        try write(#"{"rules": [{"name": "broken", "valueType": "t", "condition": {"unknown-operator": []}}]}"#)
        try await Task.sleep(for: .seconds(1))
        #expect(associations() == ["s1>a1 by first", "s2>a2 by second"])

        try write(Self.rules(Self.rule("second", source: "s2", actor: "a2")))
        #expect(try await nextAssociate() == "-s1>a1")
        #expect(associations() == ["s2>a2 by second"])

        // Nothing else went over the wire: no churn of the association that stayed.
        await agent.shutdown()
        #expect(try await nextAssociate() == "-s2>a2")
        _ = try await sniffer.disconnect()
        try await broker.stop()
    }

    enum Replacement: String, CaseIterable, Sendable {
        /// `ln -s v2 rules.new && mv -T rules.new rules`: the atomic deploy of a rules directory.
        case symlinkSwap
        /// A rules path that is one file, saved by writing a temporary file and renaming it over.
        case fileSavedByRename
    }

    /// The router follows its rules path when the path itself is replaced, not only the files in it.
    @Test(arguments: Replacement.allCases)
    func aReplacedRulesPathIsFollowed(_ replacement: Replacement) async throws {
        let broker = try await TestBroker.started()
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("coaty-replace-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: base, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: base) }
        func write(_ name: String, _ text: String) throws {
            try FileManager.default.createDirectory(
                at: base.appendingPathComponent(name).deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: base.appendingPathComponent(name))
        }
        func replace(_ name: String, by newName: String) throws {
            guard rename(base.appendingPathComponent(newName).path, base.appendingPathComponent(name).path) == 0 else {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
        }
        let first = Self.rules(Self.rule("first", source: "s1", actor: "a1"))
        let second = Self.rules(Self.rule("second", source: "s2", actor: "a2"))
        let rulesPath: String
        switch replacement {
        case .symlinkSwap:
            try write("v1/routing.json", first)
            try write("v2/routing.json", second)
            try FileManager.default.createSymbolicLink(
                atPath: base.appendingPathComponent("rules").path, withDestinationPath: "v1")
            rulesPath = "rules"
        case .fileSavedByRename:
            try write("rules.json", first)
            rulesPath = "rules.json"
        }
        let configuration = #"""
            {
              "common": {"agentIdentity": {"name": "replacing"}, "ioContextNodes": {"ctx": {
                "ioSources": [{"objectId": "s1", "name": "s1", "valueType": "t"}, {"objectId": "s2", "name": "s2", "valueType": "t"}],
                "ioActors": [{"objectId": "a1", "name": "a1", "valueType": "t"}, {"objectId": "a2", "name": "a2", "valueType": "t"}]}}},
              "communication": {"brokerUrl": "mqtt://127.0.0.1:\#(broker.port)"},
              "controllers": {"router": {"type": "ioRouter", "ioContext": {"name": "ctx"}, "rules": "\#(rulesPath)"}}
            }
            """#
        try write("agent.json", configuration)
        let agent = try await EdgeAgent.make(
            try AgentConfiguration.load(file: base.appendingPathComponent("agent.json").path))
        let router = try #require(agent.controller(named: "router", as: IoRouter.self))
        agent.start()
        func associations() -> Set<String> {
            Set(router.associations.map { "\($0.sourceId)>\($0.actorId) by \($0.rule)" })
        }
        try await waitUntil("the first rules associate", timeout: .seconds(20)) { associations() == ["s1>a1 by first"] }

        switch replacement {
        case .symlinkSwap:
            try FileManager.default.createSymbolicLink(
                atPath: base.appendingPathComponent("rules.new").path, withDestinationPath: "v2")
            try replace("rules", by: "rules.new")
        case .fileSavedByRename:
            try write(".rules.json.tmp", second)
            try replace("rules.json", by: ".rules.json.tmp")
        }
        try await waitUntil("the replaced rules associate", timeout: .seconds(20)) {
            associations() == ["s2>a2 by second"]
        }
        #expect(associations() == ["s2>a2 by second"])

        await agent.shutdown()
        try await broker.stop()
    }
}
