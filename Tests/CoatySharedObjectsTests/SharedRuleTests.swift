import CoatyCommunication
import CoatyIORouting
import CoatyJSON
import CoatyMQTT
import CoatyModel
import CoatyRuntime
import CoatySharedObjects
import CoatyTestSupport
import Foundation
import MQTTTestSupport
import RoutingRules
import Testing

/// Routing rules that read shared objects (`shared.<object>.<key>`): the router follows the objects its rules
/// name and re-evaluates when their data changes.
@Suite struct SharedRuleTests {
    static let temperature = "coaty-edge.Temperature[Celsius]"

    @Test func aRuleThatReadsASharedSetpointMovesTheAssociationWhenTheSetpointChanges() async throws {
        let broker = try await TestBroker.started()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "coaty-shared-rules-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("fan.json")
        try Data(
            """
            {"rules": [{"name": "fan when hotter than the setpoint", "valueType": "\(Self.temperature)",
              "condition": {">=": [{"var": "sourceNode.characteristics.maximum"}, {"var": ["shared.setpoints.fanOn", 1000]}]}}]}
            """.utf8
        ).write(to: file)
        let rules = try RoutingRuleSet.load(files: [file.path])
        // The default of the var does not hide the object it names.
        #expect(rules.sharedObjectNames == ["setpoints"])

        let source = IoSource(name: "SoC temperature", valueType: Self.temperature)
        let fan = IoActor(name: "Fan relay", valueType: Self.temperature)
        var plantConfiguration = Configuration(
            identity: Identity(name: "plant"),
            ioNodes: [
                IoNodeDefinition(
                    contextName: "Cooling", ioSources: [source], ioActors: [fan], characteristics: ["maximum": 65])
            ],
            communication: CommunicationOptions(port: broker.port))
        plantConfiguration.sharedObjects = [SharedObjectDefinition(name: "setpoints", data: ["fanOn": 60])]
        let actors = IoActorController()
        let plant = try await Container.resolve(configuration: plantConfiguration, controllers: [("Actors", actors)])
        let router = IoRouter(context: IoContext(name: "Cooling"), rules: rules)
        let routerAgent = try await Container.resolve(
            configuration: Configuration(
                identity: Identity(name: "router"), communication: CommunicationOptions(port: broker.port)),
            controllers: [("Router", router)])
        let associations = Recorder(actors.associations(of: fan))
        plant.start()
        routerAgent.start()
        do {
            try await associations.wait { $0 == [false, true] }
        } catch {
            // What the router knew, for a failure seen only in full runs on a loaded machine.
            let probe = try? await routerAgent.sharedObjects.connect("setpoints", ifMissing: .fail)
            print(
                "SharedRuleTests: nodes \(router.managedNodeIds), \(router.associations.count) associations, "
                    + "a new connection of the router \(probe.map { "\($0.status) \($0.snapshot?.data ?? [:])" } ?? "failed")"
            )
            throw error
        }
        #expect(router.associations.map(\.rule) == ["fan when hotter than the setpoint"])

        let operatorConnection = try await plant.sharedObjects.connect("setpoints", ifMissing: .fail)
        try await operatorConnection.set("fanOn", to: 70)
        try await associations.wait { $0 == [false, true, false] }
        #expect(router.associations.isEmpty)

        try await operatorConnection.set("fanOn", to: 62)
        try await associations.wait { $0 == [false, true, false, true] }
        // A change of another key that leaves the outcome as it is sends nothing.
        try await operatorConnection.set("fanOff", to: 55)
        try await Task.sleep(for: .milliseconds(300))
        #expect(associations.elements == [false, true, false, true])

        // Deleted, the setpoint is gone: the rule's default (1000) keeps the fan unassociated.
        try await operatorConnection.deleteObject()
        try await associations.wait { $0 == [false, true, false, true, false] }

        await routerAgent.shutdown()
        await plant.shutdown()
        try await broker.stop()
    }
}
