import CoatyJSON
import JsonLogic
import Testing

/// Results as json-logic-js gives them, including JavaScript's conversions. `===` on the expected value is
/// what is checked, so 1 and "1" differ; NaN results have their own tests.
@Suite struct OperatorTests {
    static let logic: [Case] = [
        Case(#"{"if": []}"#, "null"),
        Case(#"{"if": ["apple"]}"#, #""apple""#),
        Case(#"{"if": [true, "yes"]}"#, #""yes""#),
        Case(#"{"if": [false, "yes"]}"#, "null"),
        Case(#"{"if": [false, "a", "b"]}"#, #""b""#),
        Case(#"{"if": [false, "a", 0, "b", "c"]}"#, #""c""#),
        Case(#"{"if": [false, "a", "0", "b", "c"]}"#, #""b""#),
        Case(#"{"if": [[], "a", [0], "b", "c"]}"#, #""b""#),
        Case(#"{"if": [false, "a", false, "b", false, "c"]}"#, "null"),
        Case(#"{"?:": [{">": [3, 1]}, "visible", "hidden"]}"#, #""visible""#),
        Case(#"{"if": [{"var": "x"}, [{"var": "y"}], 99]}"#, "[42]", data: #"{"x": true, "y": 42}"#),
        Case(#"{"and": [1, 3]}"#, "3"),
        Case(#"{"and": [[], true]}"#, "[]"),
        Case(#"{"and": ["", true]}"#, #""""#),
        Case(#"{"and": ["0", true]}"#, "true"),
        Case(#"{"and": [true]}"#, "true"),
        Case(#"{"or": [0, "", null, "x", "y"]}"#, #""x""#),
        Case(#"{"or": [false, 0]}"#, "0"),
        Case(#"{"or": [[], true]}"#, "true"),
        Case(#"{"or": ["0", true]}"#, #""0""#),
        Case(#"{"!": [[]]}"#, "true"),
        Case(#"{"!": "0"}"#, "false"),
        Case(#"{"!": [0]}"#, "true"),
        Case(#"{"!": {"var": "missing"}}"#, "true"),
        Case(#"{"!!": [[]]}"#, "false"),
        Case(#"{"!!": [[0]]}"#, "true"),
        Case(#"{"!!": ["0"]}"#, "true"),
        Case(#"{"!!": [""]}"#, "false"),
    ]

    static let equality: [Case] = [
        Case(#"{"==": [1, 1]}"#, "true"),
        Case(#"{"==": [1, "1"]}"#, "true"),
        Case(#"{"==": [0, ""]}"#, "true"),
        Case(#"{"==": ["", "0"]}"#, "false"),
        Case(#"{"==": [0, "0"]}"#, "true"),
        Case(#"{"==": [" 1\n", 1]}"#, "true"),
        Case(#"{"==": ["0x10", 16]}"#, "true"),
        Case(#"{"==": ["0b101", 5]}"#, "true"),
        Case(#"{"==": ["1e3", 1000]}"#, "true"),
        Case(#"{"==": ["-0x10", -16]}"#, "false"),
        Case(#"{"==": [null, 0]}"#, "false"),
        Case(#"{"==": [null, false]}"#, "false"),
        Case(#"{"==": [null, null]}"#, "true"),
        Case(#"{"==": [false, "0"]}"#, "true"),
        Case(#"{"==": [false, ""]}"#, "true"),
        Case(#"{"==": [true, "1"]}"#, "true"),
        Case(#"{"==": [true, "true"]}"#, "false"),
        Case(#"{"==": [true, 2]}"#, "false"),
        Case(#"{"==": [[], false]}"#, "true"),
        Case(#"{"==": [[], ""]}"#, "true"),
        Case(#"{"==": [[0], false]}"#, "true"),
        Case(#"{"==": [[null], ""]}"#, "true"),
        Case(#"{"==": [[1], 1]}"#, "true"),
        Case(#"{"==": [[1, 2], "1,2"]}"#, "true"),
        Case(#"{"==": [[1, 2], [1, 2]]}"#, "true"),
        Case(#"{"==": [{"var": "o"}, "[object Object]"]}"#, "true", data: #"{"o": {"a": 1}}"#),
        Case(
            #"{"==": [{"var": "o"}, {"var": "p"}]}"#, "true", data: #"{"o": {"a": 1, "b": 2}, "p": {"b": 2, "a": 1}}"#),
        Case(#"{"==": [{"/": [0, 0]}, {"/": [0, 0]}]}"#, "false"),
        Case(#"{"==": ["Infinity", {"/": [1, 0]}]}"#, "true"),
        Case(#"{"==": ["\u00e9", "e\u0301"]}"#, "false"),
        Case(#"{"!=": [1, "1"]}"#, "false"),
        Case(#"{"!=": [1, 2]}"#, "true"),
        Case(#"{"!=": [null, 0]}"#, "true"),
        Case(#"{"===": [1, 1.0]}"#, "true"),
        Case(#"{"===": [1, "1"]}"#, "false"),
        Case(#"{"===": [0, -0]}"#, "true"),
        Case(#"{"===": [null, null]}"#, "true"),
        Case(#"{"===": [[1, [2]], [1, [2]]]}"#, "true"),
        Case(#"{"===": [[1, 2], [2, 1]]}"#, "false"),
        Case(#"{"===": [0, {"+": "0"}]}"#, "true"),
        Case(#"{"!==": [1, "1"]}"#, "true"),
        Case(#"{"!==": ["a", "a"]}"#, "false"),
    ]

    static let order: [Case] = [
        Case(#"{"<": [1, 2]}"#, "true"),
        Case(#"{"<": ["1", 2]}"#, "true"),
        Case(#"{"<": ["10", "9"]}"#, "true"),
        Case(#"{"<": ["10", 9]}"#, "false"),
        Case(#"{"<": [null, 1]}"#, "true"),
        Case(#"{"<": ["a", 1]}"#, "false"),
        Case(#"{"<": [[2], [10]]}"#, "false"),
        Case(#"{"<": [[2], 10]}"#, "true"),
        Case(#"{"<": ["\ud83d\ude00", "\uff5e"]}"#, "true"),
        Case(#"{"<": [1, 2, 3]}"#, "true"),
        Case(#"{"<": [1, 1, 3]}"#, "false"),
        Case(#"{"<": [1, 4, 3]}"#, "false"),
        Case(#"{"<": [0, {"var": "t"}, 10]}"#, "true", data: #"{"t": "5"}"#),
        Case(#"{"<=": [1, 1]}"#, "true"),
        Case(#"{"<=": [null, 0]}"#, "true"),
        Case(#"{"<=": ["a", "a"]}"#, "true"),
        Case(#"{"<=": ["a", 1]}"#, "false"),
        Case(#"{"<=": [1, 1, 1]}"#, "true"),
        Case(#"{"<=": [1, 4, 3]}"#, "false"),
        Case(#"{">": [2, "1"]}"#, "true"),
        Case(#"{">": [true, false]}"#, "true"),
        Case(#"{">": ["b", "a"]}"#, "true"),
        Case(#"{">": [1, "a"]}"#, "false"),
        Case(#"{">=": [1, 1]}"#, "true"),
        Case(#"{">=": ["2", 1]}"#, "true"),
        Case(#"{">=": [1, "a"]}"#, "false"),
        Case(#"{">=": [[], 0]}"#, "true"),
    ]

    static let arithmetic: [Case] = [
        Case(#"{"+": []}"#, "0"),
        Case(#"{"+": [1, 2, 3]}"#, "6"),
        Case(#"{"+": "3"}"#, "3"),
        Case(#"{"+": ["1", 1]}"#, "2"),
        Case(#"{"+": ["3.5px", 1]}"#, "4.5"),
        Case(#"{"+": [" 2", "0x10"]}"#, "2"),
        Case(#"{"+": ["1e3x"]}"#, "1000"),
        Case(#"{"+": ["1e"]}"#, "1"),
        Case(#"{"+": [".5"]}"#, "0.5"),
        Case(#"{"+": ["5."]}"#, "5"),
        Case(#"{"+": ["-.5e1"]}"#, "-5"),
        Case(#"{"+": [[1, 2], 1]}"#, "2"),
        Case(#"{"+": [0.1, 0.2]}"#, "0.30000000000000004"),
        Case(#"{"*": ["2"]}"#, #""2""#),
        Case(#"{"*": [2, 3, 4]}"#, "24"),
        Case(#"{"*": ["2", "3"]}"#, "6"),
        Case(#"{"*": ["2px", 3]}"#, "6"),
        Case(#"{"-": [3]}"#, "-3"),
        Case(#"{"-": "3"}"#, "-3"),
        Case(#"{"-": [true]}"#, "-1"),
        Case(#"{"-": ["5", "2"]}"#, "3"),
        Case(#"{"-": [null, 1]}"#, "-1"),
        Case(#"{"-": [[], 1]}"#, "-1"),
        Case(#"{"-": [[5], 1]}"#, "4"),
        Case(#"{"-": ["0x10", 1]}"#, "15"),
        Case(#"{"-": ["", 1]}"#, "-1"),
        Case(#"{"/": [2, 4]}"#, "0.5"),
        Case(#"{"/": ["6", "3"]}"#, "2"),
        Case(#"{"%": [7, 3]}"#, "1"),
        Case(#"{"%": [-7, 3]}"#, "-1"),
        Case(#"{"%": [7, -3]}"#, "1"),
        Case(#"{"%": [5.5, 2]}"#, "1.5"),
        Case(#"{"%": ["7", "4"]}"#, "3"),
        Case(#"{"max": [1, "3", 2]}"#, "3"),
        Case(#"{"max": [[5], 2]}"#, "5"),
        Case(#"{"max": [-1]}"#, "-1"),
        Case(#"{"min": [null, 1]}"#, "0"),
        Case(#"{"min": [true, 2]}"#, "1"),
        Case(#"{"min": [3, 1, 2]}"#, "1"),
    ]

    static let strings: [Case] = [
        Case(#"{"in": ["Spring", "Springfield"]}"#, "true"),
        Case(#"{"in": ["i", "team"]}"#, "false"),
        Case(#"{"in": [1, "a1b"]}"#, "true"),
        Case(#"{"in": [null, "nullable"]}"#, "true"),
        Case(#"{"in": ["", "a"]}"#, "true"),
        Case(#"{"in": ["", ""]}"#, "false"),
        Case(#"{"in": ["e", "e\u0301"]}"#, "true"),
        Case(#"{"in": ["Bart", ["Bart", "Homer"]]}"#, "true"),
        Case(#"{"in": [1, ["1", 2]]}"#, "false"),
        Case(#"{"in": [1, [1, 2]]}"#, "true"),
        Case(#"{"in": [[1], [[1], 2]]}"#, "true"),
        Case(#"{"in": ["a", 5]}"#, "false"),
        Case(#"{"in": ["a", null]}"#, "false"),
        Case(#"{"in": ["a", {"var": "o"}]}"#, "false", data: #"{"o": {"a": 1}}"#),
        Case(#"{"cat": []}"#, #""""#),
        Case(#"{"cat": "ice"}"#, #""ice""#),
        Case(#"{"cat": ["we all scream for ", "ice", "cream"]}"#, #""we all scream for icecream""#),
        Case(#"{"cat": ["a", 1, true, null, [1, null, [2, 3]], 1.5]}"#, #""a1true1,,2,31.5""#),
        Case(#"{"cat": [{"/": [1, 0]}, {"-": [0]}, 1e21, 1e-7, {"/": [0, 0]}]}"#, #""Infinity01e+211e-7NaN""#),
        Case(#"{"cat": [{"var": "o"}]}"#, #""[object Object]""#, data: #"{"o": {}}"#),
        Case(#"{"substr": ["jsonlogic", 4]}"#, #""logic""#),
        Case(#"{"substr": ["jsonlogic", -5]}"#, #""logic""#),
        Case(#"{"substr": ["jsonlogic", 0, 1]}"#, #""j""#),
        Case(#"{"substr": ["jsonlogic", -1, 1]}"#, #""c""#),
        Case(#"{"substr": ["jsonlogic", -5, -2]}"#, #""log""#),
        Case(#"{"substr": ["jsonlogic", 1, -5]}"#, #""son""#),
        Case(#"{"substr": ["abc", 10]}"#, #""""#),
        Case(#"{"substr": ["abc", -10]}"#, #""abc""#),
        Case(#"{"substr": ["abc", 1, -5]}"#, #""""#),
        Case(#"{"substr": ["abc", 0, null]}"#, #""""#),
        Case(#"{"substr": ["abc", "1"]}"#, #""bc""#),
        Case(#"{"substr": ["abc", 1.7]}"#, #""bc""#),
        Case(#"{"substr": ["abcdef", 1, "-2"]}"#, #""""#),
        Case(#"{"substr": [12345, 1, 2]}"#, #""23""#),
        Case(#"{"substr": [null, 0, 2]}"#, #""nu""#),
        Case(#"{"substr": ["\ud83d\ude00x", 1]}"#, #""\ufffdx""#),
        Case(#"{"substr": ["h\u00e9llo", 1, 1]}"#, #""\u00e9""#),
    ]

    static let arrays: [Case] = [
        Case(#"{"merge": []}"#, "[]"),
        Case(#"{"merge": "a"}"#, #"["a"]"#),
        Case(#"{"merge": [1, [2, [3]], null, []]}"#, "[1, 2, [3], null]"),
        Case(#"{"missing": []}"#, "[]"),
        Case(#"{"missing": "a"}"#, #"["a"]"#),
        Case(#"{"missing": ["a", "b"]}"#, #"["b"]"#, data: #"{"a": "apple"}"#),
        Case(#"{"missing": ["a", "b", "c", "d"]}"#, #"["c", "d"]"#, data: #"{"a": 0, "b": false, "c": "", "d": null}"#),
        Case(#"{"missing": ["a.b", "a.c"]}"#, #"["a.c"]"#, data: #"{"a": {"b": "brownie"}}"#),
        Case(#"{"missing": [["a", "b"], "c"]}"#, #"["b"]"#, data: #"{"a": 1}"#),
        Case(
            #"{"missing": {"merge": ["vin", {"if": [{"var": "financing"}, ["apr"], []]}]}}"#, #"["vin", "apr"]"#,
            data: #"{"financing": true}"#),
        Case(#"{"missing_some": [1, ["a", "b"]]}"#, "[]", data: #"{"b": "banana"}"#),
        Case(#"{"missing_some": [1, ["a", "b"]]}"#, #"["a", "b"]"#, data: #"{"c": "carrot"}"#),
        Case(#"{"missing_some": [2, ["a", "b", "c"]]}"#, #"["b", "c"]"#, data: #"{"a": 1, "d": 4}"#),
        Case(#"{"missing_some": ["1", ["a", "b"]]}"#, "[]", data: #"{"a": 1}"#),
        Case(#"{"map": [{"var": "n"}, {"*": [{"var": ""}, 2]}]}"#, "[2, 4, 6]", data: #"{"n": [1, 2, 3]}"#),
        Case(#"{"map": [{"var": "d"}, {"var": "qty"}]}"#, "[1, null]", data: #"{"d": [{"qty": 1}, {}]}"#),
        Case(#"{"map": [5, 1]}"#, "[]"),
        Case(#"{"filter": [[1, 2, 3], {"%": [{"var": ""}, 2]}]}"#, "[1, 3]"),
        Case(#"{"filter": [[0, "", [], "0", [0]], {"var": ""}]}"#, #"["0", [0]]"#),
        Case(#"{"filter": ["abc", true]}"#, "[]"),
        Case(
            #"{"reduce": [{"var": "n"}, {"+": [{"var": "current"}, {"var": "accumulator"}]}, {"var": "start"}]}"#, "69",
            data: #"{"n": [1, 2, 3, 4], "start": 59}"#),
        Case(
            #"{"reduce": [{"var": "d"}, {"+": [{"var": "accumulator"}, {"var": "current.qty"}]}, 0]}"#, "6",
            data: #"{"d": [{"qty": 1}, {"qty": 2}, {"qty": 3}]}"#),
        Case(#"{"reduce": [[1, 2], {"var": "accumulator"}]}"#, "null"),
        Case(#"{"reduce": ["abc", 1, 7]}"#, "7"),
        Case(#"{"reduce": [{"var": "x"}, 1]}"#, "null"),
        Case(#"{"reduce": [[], {"var": "current"}, "start"]}"#, #""start""#),
        Case(#"{"all": [[1, 2, 3], {">=": [{"var": ""}, 1]}]}"#, "true"),
        Case(#"{"all": [[1, 2, 3], {">": [{"var": ""}, 1]}]}"#, "false"),
        Case(#"{"all": [[], true]}"#, "false"),
        Case(#"{"all": ["abc", true]}"#, "false"),
        Case(#"{"none": [[1, 2, 3], {"<": [{"var": ""}, 1]}]}"#, "true"),
        Case(#"{"none": [[1, 2, 3], {"==": [{"var": ""}, 2]}]}"#, "false"),
        Case(#"{"none": [[], false]}"#, "true"),
        Case(#"{"none": [null, true]}"#, "true"),
        Case(#"{"some": [[1, 2, 3], {"==": [{"var": ""}, "2"]}]}"#, "true"),
        Case(#"{"some": [[1, 2, 3], {"<": [{"var": ""}, 1]}]}"#, "false"),
        Case(#"{"some": [[], true]}"#, "false"),
        Case(#"{"some": [{"var": "o"}, true]}"#, "false", data: #"{"o": {"a": 1}}"#),
        Case(#"{"log": "apple"}"#, #""apple""#),
        Case(#"{"log": [{"var": "a"}]}"#, "[1]", data: #"{"a": [1]}"#),
        Case(#"[1, {"var": "x"}, [{"var": "y"}]]"#, "[1, 2, [3]]", data: #"{"x": 2, "y": 3}"#),
        Case(#""plain""#, #""plain""#),
    ]

    @Test(arguments: logic + equality + order)
    func logicAndComparison(_ test: Case) throws {
        try check(test)
    }

    @Test(arguments: arithmetic + strings + arrays)
    func valuesAndArrays(_ test: Case) throws {
        try check(test)
    }

    private func check(_ test: Case) throws {
        let result = try evaluate(test.rule, data: test.data)
        let expected = try json(test.expected)
        #expect(result == expected && result.typeName == expected.typeName, "got \(result)")
        if case .string(let text) = result, case .string(let expectedText) = expected {
            #expect(text.utf8.elementsEqual(expectedText.utf8), "got \(result)")
        }
    }

    @Test(arguments: [
        #"{"+": [true]}"#, #"{"+": [null, 1]}"#, #"{"+": ["x"]}"#, #"{"+": [[]]}"#, #"{"*": [2, null]}"#,
        #"{"-": ["5px", 1]}"#, #"{"/": [1, "a"]}"#, #"{"/": [0, 0]}"#, #"{"%": [1, 0]}"#, #"{"max": [1, "a"]}"#,
        #"{"min": [{"var": "o"}, 1]}"#, #"{"-": ["0x"]}"#, #"{"-": ["1_000"]}"#,
    ])
    func notANumber(_ rule: String) throws {
        let result = try evaluate(rule, data: #"{"o": {}}"#)
        #expect(result.numberValue?.isNaN == true, "got \(result)")
    }

    @Test func infinitiesAndSignedZeros() throws {
        #expect(try evaluate(#"{"/": [1, 0]}"#) == .number(.infinity))
        #expect(try evaluate(#"{"+": ["-Infinityx"]}"#) == .number(-.infinity))
        #expect(try evaluate(#"{"-": ["Infinity"]}"#) == .number(-.infinity))
        #expect(try evaluate(#"{"+": ["1e999"]}"#) == .number(.infinity))
        #expect(try evaluate(#"{"max": [-0, 0]}"#).numberValue?.sign == .plus)
        #expect(try evaluate(#"{"max": [0, -0]}"#).numberValue?.sign == .plus)
        #expect(try evaluate(#"{"min": [0, -0]}"#).numberValue?.sign == .minus)
        #expect(try evaluate(#"{"min": [-0, 0]}"#).numberValue?.sign == .minus)
        #expect(try evaluate(#"{"-": [0]}"#).numberValue?.sign == .minus)
        #expect(try evaluate(#"{"%": [-1, 1]}"#).numberValue?.sign == .minus)
        #expect(try evaluate(#"{"*": [-1, 0, 5]}"#).numberValue?.sign == .plus)
    }

    @Test func andAndOrStopAtTheDecidingOperand() throws {
        // The operand after the deciding one would exceed a tiny budget if it were evaluated.
        let expensive = #"{"merge": [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]]}"#
        let limits = JsonLogicExpression.Limits(evaluationBudget: 5)
        let and = try JsonLogicExpression(json(#"{"and": [0, \#(expensive)]}"#), limits: limits)
        let or = try JsonLogicExpression(json(#"{"or": [1, \#(expensive)]}"#), limits: limits)
        let ifElse = try JsonLogicExpression(json(#"{"if": [true, "a", \#(expensive)]}"#), limits: limits)
        #expect(try and.evaluate(with: .null) == 0)
        #expect(try or.evaluate(with: .null) == 1)
        #expect(try ifElse.evaluate(with: .null) == "a")
        let all = try JsonLogicExpression(json(#"{"all": [[0, 1, 2, 3, 4, 5, 6, 7], {"var": ""}]}"#), limits: limits)
        #expect(try all.evaluate(with: .null) == false)
    }
}
