import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyRuntime
import Foundation
import Testing

@testable import CoatyEdgeAgent

@Suite struct AgentConfigurationTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func thePiExampleLoadsWithItsRulesAndDevices() throws {
        let configuration = try AgentConfiguration.load(
            file: Self.repository.appendingPathComponent("deploy/example-pi.json").path)
        #expect(configuration.routers.map(\.name) == ["router"])
        guard case .directory(let directory, let rules) = configuration.routers.first?.rules else {
            Issue.record("the router should load a rules directory")
            return
        }
        #expect(directory.hasSuffix("deploy/rules"))
        #expect(rules.rules.map(\.name) == ["soc-temperature-drives-fan", "door-lights-alarm"])
        #expect(configuration.devices?.sensors.count == 3)
        #expect(configuration.devices?.outputs.map(\.line.offset) == [17, 27])
        #expect(configuration.routers.first?.context.name == "Greenhouse")
    }

    /// The sections read into `devices` and `bridge` leave `base`, which the agent's container keeps for its whole
    /// life: their JSON would cost about 1 KB of heap per sensor.
    @Test func theSectionsReadIntoDevicesAndBridgeAreNotKeptAsJSON() throws {
        // The example without the login of its topics connection, whose password file exists only on a Pi, and
        // without its router, whose rules directory is relative to the example.
        let example = try Data(
            contentsOf: Self.repository.appendingPathComponent("deploy/example-home-assistant.json"))
        var json = try #require(try JSONSerialization.jsonObject(with: example) as? [String: Any])
        var topics = try #require(json["mqttTopics"] as? [String: Any])
        topics["username"] = nil
        topics["passwordFile"] = nil
        json["mqttTopics"] = topics
        json["controllers"] = nil
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("agent-\(UUID().uuidString).json")
        try JSONSerialization.data(withJSONObject: json).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }

        let configuration = try AgentConfiguration.load(file: file.path)
        #expect(configuration.devices?.sensors.isEmpty == false)
        #expect(configuration.bridge?.homeAssistant != nil)
        #expect(configuration.base.devices == nil)
        #expect(configuration.base.homeAssistant == nil)
        #expect(configuration.base.mqttTopics == nil)
    }

    /// The four agents of `deploy/demo.sh`: the guide's three strategies (shortened), two actors responsible for
    /// one operating state each, and a router with the two rules of the scenario.
    @Test func theDemoAgentsLoad() throws {
        func demo(_ name: String) throws -> AgentConfiguration {
            try AgentConfiguration.load(file: Self.repository.appendingPathComponent("deploy/demo/\(name).json").path)
        }
        let sensors = try demo("sensors")
        let sources = try #require(sensors.base.ioNodes.first).ioSources
        #expect(sources.map(\.updateStrategy) == [.none, .sample, .throttle])
        #expect(sources.map(\.updateRate) == [nil, 3000, 3000])
        #expect(sources.allSatisfy { $0.valueType == "coaty-edge.Temperature[Celsius]" })
        #expect(sensors.devices?.sensors.count == 3)
        for (name, state) in [("normal-actor", "normal"), ("emergency-actor", "emergency")] {
            let actor = try demo(name)
            #expect(actor.printsReceivedValues)
            #expect(actor.base.ioNodes.first?.characteristics?["isResponsibleForOperatingState"] == .string(state))
            #expect(actor.base.ioNodes.first?.ioActors.map(\.valueType) == ["coaty-edge.Temperature[Celsius]"])
        }
        let router = try #require(try demo("router").routers.first)
        #expect(router.context["operatingState"] == "normal")
        guard case .directory(_, let rules) = router.rules else {
            Issue.record("the demo router should load a rules directory")
            return
        }
        #expect(rules.rules.map(\.name) == ["temperature-normal", "temperature-emergency"])
    }

    func load(_ json: String, files: [String: String] = [:]) throws(ConfigurationError) -> AgentConfiguration {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coaty-agent-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        do {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent("rules"), withIntermediateDirectories: true)
            for (name, content) in files { try Data(content.utf8).write(to: directory.appendingPathComponent(name)) }
            try Data(json.utf8).write(to: directory.appendingPathComponent("agent.json"))
        } catch {
            throw ConfigurationError(file: "setup", path: nil, reason: "\(error)")
        }
        return try AgentConfiguration.load(file: directory.appendingPathComponent("agent.json").path)
    }

    static let base = #""communication": {"brokerUrl": "mqtt://127.0.0.1"}"#

    @Test func routerNodeLimit() throws {
        let configured = try load(
            #"{\#(Self.base), "controllers": {"r": {"type": "ioRouter", "ioContext": {"name": "c"}, "maxNodes": 20}}}"#)
        #expect(
            configured.routers.first?.nodeLimit
                == RetentionLimit(maximumCount: 20, maximumBytes: IoRouter.defaultNodeLimit.maximumBytes))
        let defaulted = try load(
            #"{\#(Self.base), "controllers": {"r": {"type": "ioRouter", "ioContext": {"name": "c"}}}}"#)
        #expect(defaulted.routers.first?.nodeLimit == IoRouter.defaultNodeLimit)
    }

    @Test func errorsNameFilePathAndReason() throws {
        func reason(_ json: String, files: [String: String] = [:]) -> String {
            do {
                _ = try load(json, files: files)
                return "accepted"
            } catch {
                return "\(error.path.map(\.description) ?? "-"): \(error.reason)"
            }
        }
        #expect(
            reason(#"{\#(Self.base), "controllers": {"r": {"type": "router"}}}"#)
                == #"$.controllers.r.type: "router" is not one of "ioRouter", "console""#)
        #expect(
            reason(#"{\#(Self.base), "controllers": {"r": {"type": "ioRouter"}}}"#)
                == #"$.controllers.r: missing required member "ioContext""#)
        #expect(
            reason(#"{\#(Self.base), "controllers": {"r": {"type": "ioRouter", "ioContext": {"name": "a/b"}}}}"#)
                == "$.controllers.r.ioContext.name: the context name must be non-empty without '+', '#' or '/'")
        #expect(
            reason(
                #"{\#(Self.base), "controllers": {"r": {"type": "ioRouter", "ioContext": {"name": "c"}, "rules": "missing"}}}"#
            )
            .hasPrefix("$.controllers.r.rules: the rules do not load:"))
        let broken = reason(
            #"{\#(Self.base), "controllers": {"r": {"type": "ioRouter", "ioContext": {"name": "c"}, "rules": "rules"}}}"#,
            files: ["rules/bad.json": #"{"rules": [{"name": "x", "valueType": "*", "condition": {"nope": []}}]}"#])
        #expect(broken.contains("bad.json: $.rules[0].condition.nope: "), "\(broken)")
        #expect(
            reason(
                #"{\#(Self.base), "controllers": {"r": {"type": "ioRouter", "ioContext": {"name": "c"}, "maxNodes": 0}}}"#
            )
                == "$.controllers.r.maxNodes: 0 is out of range 1...65536")
        #expect(
            reason(#"{\#(Self.base), "controllers": {"c": {"type": "console", "x": 1}}}"#)
                == #"$.controllers.c.x: unknown member "x" (known: "type")"#)
        #expect(
            reason(
                #"{\#(Self.base), "devices": {"outputs": [{"driver": "gpio-output", "ioActor": "nobody", "chip": "gpiochip0", "line": 1}]}}"#
            )
            .hasPrefix("$.devices.outputs[0].ioActor: "))
    }
}
