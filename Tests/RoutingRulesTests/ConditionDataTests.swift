import CoatyJSON
import CoatyModel
import CoatyTestSupport
import Foundation
import RoutingRules
import Testing

/// A condition may read only what it is given: source, sourceNode, actor, actorNode, context and shared. Anything
/// else reads null forever, so the file is refused; a property Coaty does not define is a warning.
@Suite struct ConditionDataTests {
    static func document(_ conditions: [String]) -> String {
        let rules = conditions.enumerated().map { #"{"name": "r\#($0)", "valueType": "t", "condition": \#($1)}"# }
        return #"{"rules": [\#(rules.joined(separator: ",\n"))]}"#
    }

    static let roots = "a condition reads source, sourceNode, actor, actorNode, context and shared"

    @Test func unknownRootsAreErrorsWithFileJSONPathAndReason() throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write(
            Self.document([
                #"{"===": [{"var": "contxt.operatingState"}, "normal"]}"#,
                #"{"var": "sauce.x"}"#,
                #"{"var": ["contxt.enabled", true]}"#,
                #"{"!": {"missing": ["source.name", "sauce.name"]}}"#,
                #"{"missing_some": [1, ["actor.name", "actr.name"]]}"#,
                #"{"var": {"cat": ["sauce.", {"var": "context.which"}]}}"#,
                #"{"var": {"cat": ["xyz", ".name"]}}"#,
                #"{"==": [{"var": "valueType"}, "t"]}"#,
            ]), to: "typos.json")
        let file = directory.file("typos.json").path
        let error = try #require(throws: RuleLoadError.self) { try RoutingRuleSet.load(directory: directory.path) }
        #expect(
            error.problems.map(\.description) == [
                #"\#(file): $.rules[0].condition["==="][0].var: unknown variable "contxt.operatingState": \#(Self.roots), not "contxt" (did you mean "context"?)"#,
                #"\#(file): $.rules[1].condition.var: unknown variable "sauce.x": \#(Self.roots), not "sauce" (did you mean "source"?)"#,
                #"\#(file): $.rules[2].condition.var[0]: unknown variable "contxt.enabled": \#(Self.roots), not "contxt" (did you mean "context"?)"#,
                #"\#(file): $.rules[3].condition["!"].missing[1]: unknown variable "sauce.name": \#(Self.roots), not "sauce" (did you mean "source"?)"#,
                #"\#(file): $.rules[4].condition.missing_some[1][1]: unknown variable "actr.name": \#(Self.roots), not "actr" (did you mean "actor"?)"#,
                #"\#(file): $.rules[5].condition.var: unknown variable: the computed path starts with "sauce.": \#(Self.roots), not "sauce" (did you mean "source"?)"#,
                #"\#(file): $.rules[6].condition.var: unknown variable: the computed path starts with "xyz", which no root does: \#(Self.roots), not "xyz""#,
                #"\#(file): $.rules[7].condition["=="][0].var: unknown variable "valueType": \#(Self.roots), not "valueType""#,
            ])
        #expect(error.problems.allSatisfy { $0.severity == .error })
    }

    @Test func whatConditionsMayReadLoadsWithoutWarnings() throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write(
            Self.document([
                #"{"==": [{"var": "context.operatingState"}, {"var": "actorNode.characteristics.isResponsibleForOperatingState"}]}"#,
                #"{">=": [{"var": ["shared.setpoints.fanOn", 30]}, {"var": "sourceNode.characteristics.anything.at.all"}]}"#,
                #"{"some": [{"var": "sourceNode.ioSources"}, {"==": [{"var": "valueType"}, {"var": "name"}]}]}"#,
                #"{"reduce": [{"var": "actorNode.ioActors"}, {"+": [{"var": "accumulator"}, {"var": "current.updateRate"}]}, 0]}"#,
                #"{"and": [{"var": "sourceNode.ioSources.0.valueType"}, {"var": "actorNode.ioActors.length"}, {"var": "source.name.length"}]}"#,
                #"{"and": [{"var": ""}, {"var": {"cat": ["shared.", {"var": "context.object"}]}}, {"var": {"var": "context.which"}}, {"var": {"cat": ["source", "Node.name"]}}]}"#,
                #"{"!": {"missing": ["source.externalRoute", "actor.useRawIoValues", "sourceNode.parentObjectId"]}}"#,
                #"{"==": [{"var": "source.updateStrategy"}, {"var": "actor.updateRate"}]}"#,
            ]), to: "fine.json")
        let rules = try RoutingRuleSet.load(directory: directory.path)
        #expect(rules.rules.count == 8)
        #expect(rules.warnings().isEmpty)
    }

    @Test func propertiesCoatyDoesNotDefineAreWarnings() throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write(
            Self.document([
                #"{"==": [{"var": "source.valueTyp"}, "t"]}"#,
                #"{"var": ["actor.enabled", true]}"#,
                #"{"var": "sourceNode.ioSource.0"}"#,
                #"{"var": "actorNode.ioActors.first.name"}"#,
                #"{"var": "sourceNode.ioSources.1.nam"}"#,
                #"{"var": "context.operatingStat"}"#,
            ]), to: "members.json")
        let file = directory.file("members.json").path
        let rules = try RoutingRuleSet.load(directory: directory.path)
        #expect(rules.rules.count == 6)
        let unlessAdded = "; it reads null unless another agent adds it"
        #expect(
            rules.warnings().map(\.description) == [
                #"\#(file): $.rules[0].condition["=="][0].var: warning: variable "source.valueTyp": source is an IoSource, which has no property "valueTyp" (did you mean "valueType"?)\#(unlessAdded)"#,
                #"\#(file): $.rules[1].condition.var[0]: warning: variable "actor.enabled": actor is an IoActor, which has no property "enabled" (Coaty defines coreType, externalId, externalRoute, isDeactivated, locationId, name, objectId, objectType, parentObjectId, updateRate, useRawIoValues and valueType)\#(unlessAdded)"#,
                #"\#(file): $.rules[2].condition.var: warning: variable "sourceNode.ioSource.0": sourceNode is an IoNode, which has no property "ioSource" (did you mean "ioSources"?)\#(unlessAdded)"#,
                #"\#(file): $.rules[3].condition.var: warning: variable "actorNode.ioActors.first.name": actorNode.ioActors is an array: what follows it must be an index or "length", found "first"\#(unlessAdded)"#,
                #"\#(file): $.rules[4].condition.var: warning: variable "sourceNode.ioSources.1.nam": sourceNode.ioSources.1 is an IoSource, which has no property "nam" (did you mean "name"?)\#(unlessAdded)"#,
            ])
        #expect(rules.warnings().allSatisfy { $0.severity == .warning })
    }

    /// Applications give the IoContext their own properties: checked only against a router's context.
    @Test func contextPropertiesAreCheckedAgainstTheRoutersContext() throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write(
            Self.document([
                #"{"==": [{"var": "context.operatingState"}, "normal"]}"#,
                #"{"==": [{"var": "context.operatingStat"}, "normal"]}"#,
                #"{"==": [{"var": "context.parentObjectId"}, {"var": "context.name"}]}"#,
            ]), to: "context.json")
        let rules = try RoutingRuleSet.load(directory: directory.path)
        #expect(rules.warnings().isEmpty)
        var context = IoContext(name: "plant")
        context["operatingState"] = "normal"
        #expect(
            rules.warnings(context: context).map(\.description) == [
                #"\#(directory.file("context.json").path): $.rules[1].condition["=="][0].var: warning: variable "context.operatingStat": context is an IoContext, which has no property "operatingStat" (did you mean "operatingState"?); it reads null unless another agent adds it"#
            ])
    }

    /// A running router is handed the refusal, and keeps its last good rules.
    @Test func theWatcherRefusesAnUnknownRoot() async throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write(Self.document([#"{"var": "context.enabled"}"#]), to: "a.json")
        var updates = RulePathWatcher(path: directory.path).makeAsyncIterator()
        let first = try #require(await updates.next())
        #expect(try first.get().rules.map(\.name) == ["r0"])

        try directory.saveByRename("a.json", Self.document([#"{"var": "contxt.enabled"}"#]))
        let refused = try #require(await updates.next())
        let error = try #require(throws: RuleLoadError.self) { try refused.get() }
        #expect(
            error.problems.map(\.reason) == [
                #"unknown variable "contxt.enabled": \#(Self.roots), not "contxt" (did you mean "context"?)"#
            ])
    }
}
