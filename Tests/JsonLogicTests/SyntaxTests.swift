import CoatyJSON
import JsonLogic
import Testing

@Suite struct SyntaxTests {
    @Test(arguments: [
        (#"{"foo": [1]}"#, #"$.foo: unknown operator "foo""#),
        (#"{"AND": [true]}"#, #"$.AND: unknown operator "AND" (did you mean "and"?)"#),
        (#"{"=": [1, 1]}"#, #"$["="]: unknown operator "=" (did you mean "=="?)"#),
        (#"{"&&": [1, 1]}"#, #"$["&&"]: unknown operator "&&" (did you mean "and"?)"#),
        (#"{"==": [1]}"#, #"$["=="]: "==" takes 2 operands, found 1"#),
        (#"{"===": 1}"#, #"$["==="]: "===" takes 2 operands, found 1"#),
        (#"{">": [3, 2, 1]}"#, #"$[">"]: ">" takes 2 operands, found 3"#),
        (#"{"<": [1, 2, 3, 4]}"#, #"$["<"]: "<" takes 2 or 3 operands, found 4"#),
        (#"{"and": []}"#, #"$.and: "and" takes at least 1 operand, found 0"#),
        (#"{"*": []}"#, #"$["*"]: "*" takes at least 1 operand, found 0"#),
        (#"{"!": []}"#, #"$["!"]: "!" takes 1 operand, found 0"#),
        (#"{"var": ["a", 1, 2]}"#, #"$.var: "var" takes 0 to 2 operands, found 3"#),
        (#"{"map": [[1]]}"#, #"$.map: "map" takes 2 operands, found 1"#),
        (#"{"substr": "abc"}"#, #"$.substr: "substr" takes 2 or 3 operands, found 1"#),
        (#"{"var": true}"#, #"$.var: a variable path must be a string, a number or null, found boolean"#),
        (#"{"var": [["a"]]}"#, #"$.var[0]: a variable path must be a string, a number or null, found array"#),
        (#"{"missing_some": [1, "a"]}"#, #"$.missing_some[1]: "missing_some" needs an array of keys, found string"#),
        (#"{}"#, #"$: an operation must be an object with exactly one operator key; found an empty object"#),
        (
            #"{"and": [true, {"==": [1, 2], "var": "x"}]}"#,
            #"$.and[1]: an operation must be an object with exactly one operator key; found 2 keys ("==", "var")"#
        ),
        (#"[1, {"nope": 1}]"#, #"$[1].nope: unknown operator "nope""#),
        (#"{"!": {"if": [{"bad": 1}]}}"#, #"$["!"].if[0].bad: unknown operator "bad""#),
    ])
    func malformedExpression(_ rule: String, _ problem: String) throws {
        #expect(try syntaxProblems(rule) == [problem])
    }

    @Test func everyProblemIsReportedAtItsPlace() throws {
        let rule = #"{"and": [{"foo": 1}, {"==": [1]}, {"or": [{"var": "ok"}, {"in": ["a"]}]}]}"#
        #expect(
            try syntaxProblems(rule, at: JSONPath().appending("rules").appending(0).appending("condition")) == [
                #"$.rules[0].condition.and[0].foo: unknown operator "foo""#,
                #"$.rules[0].condition.and[1]["=="]: "==" takes 2 operands, found 1"#,
                #"$.rules[0].condition.and[2].or[1].in: "in" takes 2 operands, found 1"#,
            ])
    }

    @Test func nestingIsLimited() throws {
        func nested(_ depth: Int) -> String {
            String(repeating: #"{"!": "#, count: depth) + "true" + String(repeating: "}", count: depth)
        }
        #expect(try syntaxProblems(nested(64)) == [])
        let problems = try syntaxProblems(nested(65))
        let path = "$" + String(repeating: #"["!"]"#, count: 64)
        #expect(problems == ["\(path): the expression nests deeper than 64 levels"])

        let arrays = String(repeating: "[", count: 70) + String(repeating: "]", count: 70)
        #expect(try syntaxProblems(arrays).first?.hasSuffix("the expression nests deeper than 64 levels") == true)

        let small = JsonLogicExpression.Limits(maximumDepth: 2)
        #expect(throws: JsonLogicSyntaxError.self) { try JsonLogicExpression(json(#"{"!": [[[1]]]}"#), limits: small) }
        #expect(try JsonLogicExpression(json(#"{"!": [[1]]}"#), limits: small).evaluate(with: .null) == false)
    }

    @Test func deepestAllowedExpressionEvaluatesOnAConcurrencyThread() async throws {
        let depth = 64
        let rule = String(repeating: #"{"!": "#, count: depth) + #"{"var": "x"}"# + String(repeating: "}", count: depth)
        let expression = try JsonLogicExpression(json(rule), limits: .init(maximumDepth: depth + 1))
        let result = try await Task.detached { try expression.evaluate(with: ["x": true]) }.value
        #expect(result == true)
    }

    @Test func expressionsCompareByTheirJSON() throws {
        let a = try JsonLogicExpression(json(#"{"==": [{"var": "a"}, 1]}"#))
        let b = try JsonLogicExpression(json(#"{"==": [{"var": "a"}, 1]}"#))
        let c = try JsonLogicExpression(json(#"{"==": [{"var": "a"}, 2]}"#))
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(a != c)
        #expect(a.description == #"{"==":[{"var":"a"},1]}"#)
    }
}

@Suite struct EvaluationErrorTests {
    @Test func missingSomeNeedsAnArrayAtRunTime() throws {
        let expression = try JsonLogicExpression(json(#"{"missing_some": [1, {"var": "keys"}]}"#))
        #expect(
            throws: JsonLogicEvaluationError(
                path: JSONPath([.key("missing_some"), .index(1)]),
                reason: #""missing_some" needs an array of keys, found number"#)
        ) {
            try expression.evaluate(with: ["keys": 5])
        }
        #expect(try expression.evaluate(with: ["keys": ["a", "b"], "a": 1]) == [])
    }

    @Test func runawayGrowthHitsTheBudget() throws {
        let elements = (0..<40).map(String.init).joined(separator: ",")
        let doubling = try JsonLogicExpression(
            json(#"{"reduce": [[\#(elements)], {"cat": [{"var": "accumulator"}, {"var": "accumulator"}]}, "x"]}"#))
        #expect(
            throws: JsonLogicEvaluationError(
                path: JSONPath([.key("reduce"), .index(1), .key("cat")]),
                reason: "evaluation exceeded its budget of 1000000 steps")
        ) {
            try doubling.evaluate(with: .null)
        }
        let merging = try JsonLogicExpression(
            json(#"{"reduce": [[\#(elements)], {"merge": [{"var": "accumulator"}, {"var": "accumulator"}]}, [1]]}"#))
        #expect(throws: JsonLogicEvaluationError.self) { try merging.evaluate(with: .null) }

        let mapping = try JsonLogicExpression(
            json(#"{"map": [{"var": ""}, {"var": ""}]}"#), limits: .init(evaluationBudget: 100))
        let big = JSONValue.array(Array(repeating: 1, count: 200))
        #expect(throws: JsonLogicEvaluationError.self) { try mapping.evaluate(with: big) }
        #expect(
            try mapping.evaluate(with: .array(Array(repeating: 1, count: 10))) == .array(Array(repeating: 1, count: 10))
        )
    }
}
