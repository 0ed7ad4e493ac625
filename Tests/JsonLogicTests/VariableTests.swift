import CoatyJSON
import JsonLogic
import Testing

@Suite struct VariableTests {
    static let paths: [Case] = [
        Case(#"{"var": "a"}"#, "1", data: #"{"a": 1}"#),
        Case(#"{"var": ["a"]}"#, "1", data: #"{"a": 1}"#),
        Case(#"{"var": "b"}"#, "null", data: #"{"a": 1}"#),
        Case(#"{"var": "a"}"#, "null"),
        Case(#"{"var": "a.b.c"}"#, "true", data: #"{"a": {"b": {"c": true}}}"#),
        Case(#"{"var": "a.q"}"#, "null", data: #"{"a": {"b": "c"}}"#),
        Case(#"{"var": "a.b.c"}"#, "null", data: #"{"a": null}"#),
        Case(#"{"var": "a.b.c"}"#, "null", data: #"{"a": {"b": null}}"#),
        Case(#"{"var": 1}"#, #""banana""#, data: #"["apple", "banana"]"#),
        Case(#"{"var": "1"}"#, #""banana""#, data: #"["apple", "banana"]"#),
        Case(#"{"var": "1.1"}"#, #""beer""#, data: #"["apple", ["banana", "beer"]]"#),
        Case(#"{"var": "list.0.name"}"#, #""x""#, data: #"{"list": [{"name": "x"}]}"#),
        Case(#"{"var": "list.01"}"#, "null", data: #"{"list": [1, 2]}"#),
        Case(#"{"var": "list.-1"}"#, "null", data: #"{"list": [1, 2]}"#),
        Case(#"{"var": "list.2"}"#, "null", data: #"{"list": [1, 2]}"#),
        Case(#"{"var": "list.length"}"#, "2", data: #"{"list": [1, 2]}"#),
        Case(#"{"var": "s.length"}"#, "3", data: #"{"s": "h\ud83d\ude00"}"#),
        Case(#"{"var": "s.1"}"#, #""b""#, data: #"{"s": "abc"}"#),
        Case(#"{"var": "n.x"}"#, "null", data: #"{"n": 5}"#),
        Case(#"{"var": "a..b"}"#, "1", data: #"{"a": {"": {"b": 1}}}"#),
        Case(#"{"var": "o.length"}"#, "null", data: #"{"o": {}}"#),
        Case(#"{"var": "\u00e9"}"#, "null", data: #"{"e\u0301": 1}"#),
        Case(#"{"var": {"cat": ["a", ".b"]}}"#, "2", data: #"{"a": {"b": 2}}"#),
        Case(
            #"{"var": [{"if": [{"<": [{"var": "t"}, 110]}, "pie.filling", "pie.eta"]}]}"#, #""apple""#,
            data: #"{"t": 100, "pie": {"filling": "apple", "eta": "60s"}}"#),
    ]

    static let wholeData: [Case] = [
        Case(#"{"var": ""}"#, "1", data: "1"),
        Case(#"{"var": null}"#, "1", data: "1"),
        Case(#"{"var": []}"#, #"{"a": 1}"#, data: #"{"a": 1}"#),
        Case(#"{"var": [null, 5]}"#, "null"),
        Case(#"{"var": ["", 5]}"#, "[]", data: "[]"),
    ]

    static let defaults: [Case] = [
        Case(#"{"var": ["a", 1]}"#, "1"),
        Case(#"{"var": ["b", 2]}"#, "2", data: #"{"a": 1}"#),
        Case(#"{"var": ["a.q", 9]}"#, "9", data: #"{"a": {"b": "c"}}"#),
        Case(#"{"var": ["a.b", "none"]}"#, #""none""#, data: #"{"a": null}"#),
        Case(#"{"var": ["a", {"cat": ["x", "y"]}]}"#, #""xy""#),
        // A member that is present with the value null is found, so the default does not apply.
        Case(#"{"var": ["a", 5]}"#, "null", data: #"{"a": null}"#),
        Case(#"{"var": ["a", 5]}"#, "0", data: #"{"a": 0}"#),
        Case(#"{"var": ["a", null]}"#, "null"),
    ]

    @Test(arguments: paths + wholeData + defaults)
    func variable(_ test: Case) throws {
        let result = try evaluate(test.rule, data: test.data)
        let expected = try json(test.expected)
        #expect(result == expected && result.typeName == expected.typeName, "got \(result)")
    }

    @Test func routerDataShape() throws {
        let data = try json(
            #"""
            {"source": {"name": "Temperature Source 1", "valueType": "coaty-edge.Temperature[Celsius]", "updateRate": 100},
             "sourceNode": {"name": "TemperatureMeasurement", "characteristics": {}},
             "actor": {"name": "Fan", "valueType": "coaty-edge.Temperature[Celsius]"},
             "actorNode": {"name": "TemperatureMeasurement", "characteristics": {"isResponsibleForOperatingState": "normal"}},
             "context": {"name": "TemperatureMeasurement", "operatingState": "normal"}}
            """#)
        let rule = try JsonLogicExpression(
            json(
                #"{"===": [{"var": "actorNode.characteristics.isResponsibleForOperatingState"}, {"var": "context.operatingState"}]}"#
            ))
        #expect(try rule.isSatisfied(by: data))
        var emergency = data.objectValue ?? [:]
        emergency["context"] = ["name": "TemperatureMeasurement", "operatingState": "emergency"]
        #expect(try !rule.isSatisfied(by: .object(emergency)))
    }
}

@Suite struct TruthinessTests {
    @Test(arguments: [
        ("null", false), ("false", false), ("true", true), ("0", false), ("-0", false), ("1", true), ("-1", true),
        ("0.5", true), (#""""#, false), (#""0""#, true), (#""false""#, true), (#"" ""#, true), ("[]", false),
        ("[0]", true), ("[[]]", true), ("[null]", true), ("{}", true), (#"{"a": false}"#, true),
    ])
    func jsonValues(_ text: String, _ truthy: Bool) throws {
        let value = try json(text)
        #expect(value.isJsonLogicTruthy == truthy)
        #expect(try evaluate(#"{"!!": [{"var": ""}]}"#, data: text) == .bool(truthy))
        #expect(try evaluate(#"{"if": [{"var": ""}, "yes", "no"]}"#, data: text) == (truthy ? "yes" : "no"))
    }

    @Test func notANumberIsFalse() {
        #expect(!JSONValue.number(.nan).isJsonLogicTruthy)
        #expect(JSONValue.number(.infinity).isJsonLogicTruthy)
    }
}

/// What an expression reads of its data, for checks of rule files before they are evaluated.
@Suite struct DataReferenceTests {
    func references(_ rule: String) throws -> [String] {
        try JsonLogicExpression(JSONValue(parsing: rule)).dataReferences.map { reference in
            let path: String
            switch reference.path {
            case .literal(let components): path = components.joined(separator: ".")
            case .computed(let prefix): path = "computed " + JSONValue.string(prefix).serialized()
            }
            return "\(reference.location) \(path)" + (reference.hasDefault ? " with default" : "")
        }
    }

    @Test func varsInOrderWithWhereTheyAreWritten() throws {
        #expect(
            try references(#"{"if": [{"var": "a.b"}, {"var": ["c", {"var": "d.0"}]}, {"var": ""}, {"var": 1}]}"#) == [
                "$.if[0].var a.b", "$.if[1].var[0] c with default", "$.if[1].var[1].var d.0", "$.if[2].var ",
                "$.if[3].var 1",
            ])
    }

    @Test func computedPathsKeepTheirLiteralStart() throws {
        #expect(
            try references(#"{"or": [{"var": {"cat": ["shared.", {"var": "k"}]}}, {"var": [{"var": "p"}, 0]}]}"#) == [
                #"$.or[0].var computed "shared.""#, "$.or[0].var.cat[1].var k",
                #"$.or[1].var[0] computed "" with default"#,
                "$.or[1].var[0].var p",
            ])
    }

    @Test func keysOfMissingAndMissingSome() throws {
        #expect(
            try references(#"{"missing": ["a", ["b.c", 1]]}"#) == [
                "$.missing[0] a", "$.missing[1][0] b.c with default",
            ])
        #expect(try references(#"{"missing": [["a", "b"]]}"#) == ["$.missing[0][0] a", "$.missing[0][1] b"])
        #expect(try references(#"{"missing": {"var": "list"}}"#) == [#"$.missing computed """#, "$.missing.var list"])
        #expect(
            try references(#"{"missing_some": [{"var": "n"}, ["x", "y.z"]]}"#) == [
                #"$.missing_some[0].var n"#, #"$.missing_some[1][0] x"#, #"$.missing_some[1][1] y.z"#,
            ])
    }

    @Test func perElementOperandsReadTheElementNotTheData() throws {
        #expect(
            try references(
                #"{"and": [{"some": [{"var": "list"}, {"var": "ok"}]}, {"reduce": [{"var": "xs"}, {"+": [{"var": "current"}, {"var": "accumulator"}]}, {"var": "start"}]}, {"map": [[1], {"var": ""}]}]}"#
            ) == ["$.and[0].some[0].var list", "$.and[1].reduce[0].var xs", "$.and[1].reduce[2].var start"])
    }
}
