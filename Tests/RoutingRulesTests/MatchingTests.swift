import CoatyJSON
import Foundation
import JsonLogic
import RoutingRules
import Testing

@Suite struct MatchingTests {
    static let temperature = "coaty-edge.Temperature[Celsius]"

    func source(_ valueType: String?) -> JSONValue {
        var object: JSONObject = ["name": "Source", "coreType": "IoSource"]
        object.set("valueType", ifPresent: valueType.map(JSONValue.string))
        return .object(object)
    }

    func match(_ ruleSet: RoutingRuleSet, valueType: String?, context: JSONValue = ["name": "C"]) -> RuleMatch {
        ruleSet.match(
            source: source(valueType), sourceNode: ["name": "C"],
            actor: ["name": "Actor", "valueType": .string(valueType ?? "")],
            actorNode: ["name": "C", "characteristics": ["zone": "north"]], context: context)
    }

    @Test func rulesForAValueTypeShadowTheRulesForAny() throws {
        let ruleSet = try RoutingRuleSet([
            rule("any", .any, "true", index: 0),
            rule("temperature", .named(Self.temperature), "false", index: 1),
        ])
        #expect(match(ruleSet, valueType: Self.temperature).rule == nil)
        #expect(match(ruleSet, valueType: "coaty-edge.Switch").rule?.name == "any")
        #expect(match(ruleSet, valueType: nil).rule?.name == "any")
    }

    @Test func firstMatchingRuleWins() throws {
        let ruleSet = try RoutingRuleSet([
            rule(
                "north", .named(Self.temperature), #"{"==": [{"var": "actorNode.characteristics.zone"}, "north"]}"#,
                index: 0),
            rule("everywhere", .named(Self.temperature), "true", index: 1),
            rule(
                "south", .named(Self.temperature), #"{"==": [{"var": "actorNode.characteristics.zone"}, "south"]}"#,
                index: 2),
        ])
        let result = match(ruleSet, valueType: Self.temperature)
        #expect(result.rule?.name == "north")
        #expect(result.failures.isEmpty)

        let reordered = try RoutingRuleSet([ruleSet.rules[2], ruleSet.rules[1], ruleSet.rules[0]])
        #expect(match(reordered, valueType: Self.temperature).rule?.name == "everywhere")
    }

    @Test func conditionsSeeTheWholePair() throws {
        let condition = #"""
            {"and": [{"===": [{"var": "source.name"}, "Source"]}, {"===": [{"var": "sourceNode.name"}, "C"]},
                     {"===": [{"var": "actor.name"}, "Actor"]}, {"===": [{"var": "actorNode.characteristics.zone"}, "north"]},
                     {"===": [{"var": "context.state"}, "on"]}]}
            """#
        let ruleSet = try RoutingRuleSet([rule("all", .any, condition)])
        #expect(match(ruleSet, valueType: "t", context: ["name": "C", "state": "on"]).rule?.name == "all")
        #expect(match(ruleSet, valueType: "t", context: ["name": "C", "state": "off"]).rule == nil)
    }

    @Test func aFailingConditionCountsAsFalseAndIsReported() throws {
        let broken = try rule(
            "broken", .named(Self.temperature), #"{"missing_some": [1, {"var": "context.keys"}]}"#, index: 0)
        let ruleSet = try RoutingRuleSet([broken, rule("fallback", .named(Self.temperature), "true", index: 1)])
        let result = match(ruleSet, valueType: Self.temperature, context: ["keys": 3])
        #expect(result.rule?.name == "fallback")
        let failure = try #require(result.failures.first)
        #expect(result.failures.count == 1)
        #expect(failure.rule == broken)
        #expect(
            failure.error
                == JsonLogicEvaluationError(
                    path: JSONPath([.key("rules"), .index(0), .key("condition"), .key("missing_some"), .index(1)]),
                    reason: #""missing_some" needs an array of keys, found number"#))
        #expect(
            failure.description
                == #"rule "broken" in test.json: $.rules[0].condition.missing_some[1]: "missing_some" needs an array of keys, found number"#
        )

        let alone = try RoutingRuleSet([broken])
        let none = match(alone, valueType: Self.temperature, context: ["keys": 3])
        #expect(none.rule == nil)
        #expect(none.failures.map(\.rule.name) == ["broken"])
    }

    @Test func conditionsReadSharedObjectsAndTheRulesNameThem() throws {
        let ruleSet = try RoutingRuleSet([
            rule(
                "hot", .named(Self.temperature),
                #"{">": [{"var": "actorNode.characteristics.limit"}, {"var": "shared.setpoints.fanOn"}]}"#, index: 0),
            rule(
                "mode", .any,
                #"{"or": [{"==": [{"var": ["shared.modes.current", "auto"]}, "manual"]}, {"var": "shared"}, {"var": "context.name"}]}"#,
                index: 1),
            rule("computed", .any, #"{"var": {"cat": ["shared.", "hidden"]}}"#, index: 2),
        ])
        // Computed paths cannot be known before evaluating; `shared` alone names no object.
        #expect(ruleSet.sharedObjectNames == ["setpoints", "modes"])
        func hot(fanOn: JSONValue) -> String? {
            ruleSet.match(
                source: source(Self.temperature), sourceNode: ["name": "C"],
                actor: ["name": "Fan", "valueType": .string(Self.temperature)],
                actorNode: ["name": "C", "characteristics": ["limit": 70]], context: ["name": "C"],
                shared: ["setpoints": ["fanOn": fanOn]]
            ).rule?.name
        }
        #expect(hot(fanOn: 60) == "hot")
        #expect(hot(fanOn: 75) == nil)
    }

    @Test func anEmptyRuleSetAssociatesNothing() {
        let result = match(.empty, valueType: Self.temperature)
        #expect(result.rule == nil)
        #expect(result.failures.isEmpty)
    }

    @Test func ruleSetsCompareByHowTheyRoute() throws {
        let a = try rule("a", .named("t"), "true", file: "one.json", index: 0)
        let b = try rule("b", .named("u"), #"{"var": "x"}"#, file: "one.json", index: 1)
        var movedAndDescribed = b
        movedAndDescribed.origin = RuleOrigin(file: "two.json", path: JSONPath([.key("rules"), .index(7)]))
        movedAndDescribed.description = "Now with a description."
        #expect(try RoutingRuleSet([a, b]) == RoutingRuleSet([a, movedAndDescribed]))
        #expect(
            try RoutingRuleSet([a, b]) == RoutingRuleSet([b, a]),
            "rules of different value types do not shadow each other")

        let a2 = try rule("a2", .named("t"), "false", index: 2)
        #expect(try RoutingRuleSet([a, a2]) != RoutingRuleSet([a2, a]))
        #expect(try RoutingRuleSet([a, b]) != RoutingRuleSet([a]))
        var renamed = a
        renamed.name = "renamed"
        #expect(try RoutingRuleSet([a]) != RoutingRuleSet([renamed]))
        var changed = b
        changed.condition = try JsonLogicExpression(["var": "y"])
        #expect(try RoutingRuleSet([b]) != RoutingRuleSet([changed]))
        var anyType = a
        anyType.valueType = .any
        #expect(try RoutingRuleSet([a]) != RoutingRuleSet([anyType]))
    }
}

/// The rule file shipped in the repository: the two-actor temperature scenario of the Coaty developer guide.
@Suite struct TemperatureScenarioTests {
    static let rulesDirectory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("rules/temperature-demo").path

    @Test func exampleRulesRouteByOperatingState() throws {
        let ruleSet = try RoutingRuleSet.load(directory: Self.rulesDirectory)
        #expect(ruleSet.rules.map(\.name) == ["temperature-normal", "temperature-emergency"])

        let source: JSONValue = [
            "name": "Temperature Source 1", "coreType": "IoSource", "objectType": "coaty.IoSource",
            "valueType": "coaty-edge.Temperature[Celsius]", "updateRate": 100,
        ]
        let sourceNode: JSONValue = ["name": "TemperatureMeasurement", "coreType": "IoNode", "characteristics": [:]]
        let actor: JSONValue = [
            "name": "Temperature Actor", "coreType": "IoActor", "valueType": "coaty-edge.Temperature[Celsius]",
        ]
        func actorNode(_ responsibility: String) -> JSONValue {
            [
                "name": "TemperatureMeasurement", "coreType": "IoNode",
                "characteristics": ["isResponsibleForOperatingState": .string(responsibility)],
            ]
        }
        func context(_ state: String) -> JSONValue {
            ["name": "TemperatureMeasurement", "coreType": "IoContext", "operatingState": .string(state)]
        }
        func rule(_ responsibility: String, _ state: String) -> String? {
            ruleSet.match(
                source: source, sourceNode: sourceNode, actor: actor, actorNode: actorNode(responsibility),
                context: context(state)
            )
            .rule?.name
        }
        #expect(rule("normal", "normal") == "temperature-normal")
        #expect(rule("emergency", "normal") == nil)
        #expect(rule("emergency", "emergency") == "temperature-emergency")
        #expect(rule("normal", "emergency") == nil)
        let noCharacteristics = ruleSet.match(
            source: source, sourceNode: sourceNode, actor: actor, actorNode: ["name": "TemperatureMeasurement"],
            context: context("normal"))
        #expect(noCharacteristics.rule == nil)
        #expect(noCharacteristics.failures.isEmpty, "a missing member is null, not an error")
    }
}
