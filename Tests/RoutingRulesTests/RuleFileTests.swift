import CoatyJSON
import CoatyTestSupport
import Foundation
import JsonLogic
import RoutingRules
import Testing

@Suite struct RuleFileTests {
    @Test func directoryLoadsRuleFilesInFileNameOrder() throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write(rulesDocument(["b1"]), to: "b.json")
        try directory.write(rulesDocument(["a1", "a2"]), to: "a.json")
        try directory.write(rulesDocument(["B1"]), to: "B.json")
        try directory.write("lock file of an editor", to: ".#a.json")
        try directory.write(#"{"$schema": "https://json-schema.org/draft/2020-12/schema"}"#, to: "rules.schema.json")
        try directory.write("not rules", to: "notes.txt")
        try directory.write("backup", to: "a.json~")

        let ruleSet = try RoutingRuleSet.load(directory: directory.path)
        #expect(ruleSet.rules.map(\.name) == ["B1", "a1", "a2", "b1"])
        #expect(
            ruleSet.rules[1].origin
                == RuleOrigin(file: directory.file("a.json").path, path: JSONPath([.key("rules"), .index(0)])))
        #expect(ruleSet.rules[2].origin.description == "\(directory.file("a.json").path): $.rules[1]")
    }

    @Test func aRuleHasAllItsParts() throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write(
            #"""
            {"$schema": "rules.schema.json", "rules": [
              {"name": "fan", "valueType": "*", "description": "Any value to the fan.", "condition": {"var": "actor.enabled"}},
              {"name": "relay", "valueType": "coaty-edge.Switch", "condition": true}
            ]}
            """#, to: "r.json")
        let rules = try RoutingRuleSet.load(files: [directory.file("r.json").path]).rules
        #expect(rules.count == 2)
        #expect(rules[0].name == "fan")
        #expect(rules[0].valueType == .any)
        #expect(rules[0].description == "Any value to the fan.")
        #expect(rules[0].condition.json == ["var": "actor.enabled"])
        #expect(rules[1].valueType == .named("coaty-edge.Switch"))
        #expect(rules[1].description == nil)
    }

    @Test func emptyDirectoryAndEmptyFileGiveNoRules() throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        #expect(try RoutingRuleSet.load(directory: directory.path) == .empty)
        try directory.write(#"{"rules": []}"#, to: "none.json")
        #expect(try RoutingRuleSet.load(directory: directory.path).rules.isEmpty)
    }

    @Test func jsonSyntaxErrorsHaveLineAndColumn() throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write("{\"rules\": [\n  {\"name\": \"x\",,}\n]}", to: "bad.json")
        let error = try #require(throws: RuleLoadError.self) { try RoutingRuleSet.load(directory: directory.path) }
        #expect(
            error.problems == [
                RuleFileProblem(
                    file: directory.file("bad.json").path, location: .text(line: 2, column: 16),
                    reason: "expected a member name in quotes")
            ])
        #expect(error.description == "\(directory.file("bad.json").path):2:16: expected a member name in quotes")
    }

    @Test func everyProblemInAFileIsReported() throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write(
            #"""
            {"$schema": 2, "rule": [], "rules": [
              {"valueType": "t", "condition": true},
              {"name": "", "valueType": "", "condition": true, "descripton": "typo"},
              {"name": "b", "valueType": 3, "condition": {"foo": 1}, "description": 4},
              {"name": "c", "valueType": " t", "condition": {"and": [{"==": [1]}, {"<": [1, 2, 3, 4]}]}},
              {"name": "d", "valueType": "t"},
              "not a rule",
              {"name": "ok", "valueType": "t", "condition": {"==": [{"var": "a"}, {"a": 1, "b": 2}]}}
            ]}
            """#, to: "many.json")
        let error = try #require(throws: RuleLoadError.self) { try RoutingRuleSet.load(directory: directory.path) }
        let file = directory.file("many.json").path
        #expect(error.problems.allSatisfy { $0.file == file })
        #expect(
            error.problems.map(\.description) == [
                #"\#(file): $.rule: unknown member "rule" (known: "$schema", "rules")"#,
                #"\#(file): $.$schema: expected a string, found number"#,
                #"\#(file): $.rules[0]: missing required member "name""#,
                #"\#(file): $.rules[1].descripton: unknown member "descripton" (known: "name", "valueType", "condition", "description")"#,
                #"\#(file): $.rules[1].name: must not be an empty string"#,
                #"\#(file): $.rules[1].valueType: must not be an empty string; use "*" for a rule that applies to any value type"#,
                #"\#(file): $.rules[2].valueType: expected a string, found number"#,
                #"\#(file): $.rules[2].description: expected a string, found number"#,
                #"\#(file): $.rules[2].condition.foo: unknown operator "foo""#,
                #"\#(file): $.rules[3].valueType: " t" has white space at its start or end"#,
                #"\#(file): $.rules[3].condition.and[0]["=="]: "==" takes 2 operands, found 1"#,
                #"\#(file): $.rules[3].condition.and[1]["<"]: "<" takes 2 or 3 operands, found 4"#,
                #"\#(file): $.rules[4]: missing required member "condition""#,
                #"\#(file): $.rules[5]: expected an object, found string"#,
                #"\#(file): $.rules[6].condition["=="][1]: an operation must be an object with exactly one operator key; found 2 keys ("a", "b")"#,
            ])
    }

    @Test(arguments: [
        ("[]", "$: expected an object, found array"),
        ("{}", #"$: missing required member "rules""#),
        (#"{"rules": {}}"#, "$.rules: expected an array, found object"),
    ])
    func documentShape(_ text: String, _ problem: String) throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write(text, to: "doc.json")
        let error = try #require(throws: RuleLoadError.self) { try RoutingRuleSet.load(directory: directory.path) }
        #expect(error.problems.map(\.description) == ["\(directory.file("doc.json").path): \(problem)"])
    }

    @Test func namesAreUniqueAcrossFiles() throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write(rulesDocument(["x", "y"]), to: "a.json")
        try directory.write(rulesDocument(["z", "y"]), to: "b.json")
        try directory.write(#"{"rules": [{"name": "w", "valueType": "t", "condition": {"bad": 1}}]}"#, to: "c.json")
        let error = try #require(throws: RuleLoadError.self) { try RoutingRuleSet.load(directory: directory.path) }
        #expect(
            error.problems == [
                RuleFileProblem(
                    file: directory.file("b.json").path,
                    location: .json(JSONPath([.key("rules"), .index(1), .key("name")])),
                    reason: #"duplicate rule name "y", first defined in \#(directory.file("a.json").path): $.rules[1]"#),
                RuleFileProblem(
                    file: directory.file("c.json").path,
                    location: .json(JSONPath([.key("rules"), .index(0), .key("condition"), .key("bad")])),
                    reason: #"unknown operator "bad""#),
            ])
    }

    @Test func unreadableFilesAndDirectories() throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        let missing = directory.file("nowhere").path
        #expect(
            throws: RuleLoadError(problems: [
                RuleFileProblem(
                    file: missing, location: .file, reason: "cannot list the directory: No such file or directory")
            ])
        ) { try RoutingRuleSet.load(directory: missing) }

        try directory.write(rulesDocument(["a"]), to: "ok.json")
        try FileManager.default.createDirectory(
            atPath: directory.file("folder.json").path, withIntermediateDirectories: false)
        try directory.write(#"{"rules": []}"# + String(repeating: " ", count: 4 << 20), to: "huge.json")
        let error = try #require(throws: RuleLoadError.self) {
            try RoutingRuleSet.load(files: [
                directory.file("ok.json").path, directory.file("gone.json").path, directory.file("folder.json").path,
                directory.file("huge.json").path,
            ])
        }
        #expect(
            error.problems.map(\.description) == [
                "\(directory.file("gone.json").path): cannot read the file: No such file or directory",
                "\(directory.file("folder.json").path): not a regular file (a directory)",
                "\(directory.file("huge.json").path): 4.1 MiB is larger than the limit of 1 MiB",
            ])
    }

    /// A device would be read without end, a FIFO would block the check (and a reload) until a writer comes.
    @Test func devicesAndFIFOsAreRefusedWithoutReadingOrWaiting() throws {
        #expect(
            throws: RuleLoadError(problems: [
                RuleFileProblem(file: "/dev/zero", location: .file, reason: "not a regular file (a character device)")
            ])
        ) { try RoutingRuleSet.load(files: ["/dev/zero"]) }

        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write(rulesDocument(["a"]), to: "a.json")
        try makeFIFO(directory.file("x.json").path)
        let error = returnsPromptly(unblocking: directory.file("x.json").path) { () -> RuleLoadError? in
            do throws(RuleLoadError) {
                _ = try RoutingRuleSet.load(directory: directory.path)
                return nil
            } catch {
                return error
            }
        }
        #expect(error??.description == "\(directory.file("x.json").path): not a regular file (a FIFO)")
    }

    @Test func aKeyGivenTwiceIsAnErrorAtItsPath() throws {
        let directory = try ScratchDirectory("rules-test")
        defer { directory.remove() }
        try directory.write("{\"rules\": [],\n \"rules\": []}", to: "top.json")
        try directory.write(
            #"""
            {"rules": [
              {"name": "a", "valueType": "*", "condition": {"and": [{"===": [{"var": "context.operatingState"}, "normal"]}],
                                                         "and": [true]}}
            ]}
            """#, to: "nested.json")
        let error = try #require(throws: RuleLoadError.self) {
            try RoutingRuleSet.load(files: [directory.file("top.json").path, directory.file("nested.json").path])
        }
        #expect(
            error.problems.map(\.description) == [
                "\(directory.file("top.json").path): $.rules: duplicate key (line 2, column 2)",
                "\(directory.file("nested.json").path): $.rules[0].condition.and: duplicate key (line 3, column 46)",
            ])
    }

    @Test func ruleSetRejectsDuplicateNames() throws {
        let first = try rule("x", .any, "true", file: "a.json")
        let second = try rule("x", .named("t"), "false", file: "b.json", index: 3)
        #expect(
            throws: RuleLoadError(problems: [
                RuleFileProblem(
                    file: "b.json", location: .json(JSONPath([.key("rules"), .index(3), .key("name")])),
                    reason: #"duplicate rule name "x", first defined in a.json: $.rules[0]"#)
            ])
        ) { try RoutingRuleSet([first, second]) }
    }
}
