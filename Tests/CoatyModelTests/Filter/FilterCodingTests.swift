import CoatyJSON
import Testing

@testable import CoatyModel

@Suite struct FilterCodingTests {
    private func parse(_ text: String) throws -> JSONValue {
        try JSONValue(parsing: text)
    }

    /// What JS's `filterOp` functions produce, operator by operator.
    @Test(arguments: [
        (ObjectFilterExpression.lessThan(42), "[0,42]"),
        (.lessThanOrEqual("ABc"), #"[1,"ABc"]"#),
        (.greaterThan(41), "[2,41]"),
        (.greaterThanOrEqual(-1.5), "[3,-1.5]"),
        (.between(6, 8), "[4,6,8]"),
        (.notBetween("Abf", "Abd"), #"[5,"Abf","Abd"]"#),
        (.like(#"%a_c\\d\_"#), #"[6,"%a_c\\\\d\\_"]"#),
        (.equals(["foo": 42, "bar": [42, 43]]), #"[7,{"foo":42,"bar":[42,43]}]"#),
        (.notEquals(.null), "[8,null]"),
        (.exists, "[9]"),
        (.notExists, "[10]"),
        (.contains([42, [43]]), "[11,[42,[43]]]"),
        (.notContains(43), "[12,43]"),
        (.in([43, 42, "42"]), #"[13,[43,42,"42"]]"#),
        (.notIn([["foo": 42, "bar": 43]]), #"[14,[{"foo":42,"bar":43}]]"#),
    ])
    func expressionsEncodeAsJavaScriptBuildsThem(expression: ObjectFilterExpression, wire: String) throws {
        #expect(expression.json.serialized() == wire)
        #expect(try ObjectFilterExpression(json: parse(wire)) == expression)
    }

    @Test func everyOperatorHasItsCoatyCode() {
        let names = ObjectFilterOperator.allCases.map { "\($0)" }
        #expect(ObjectFilterOperator.allCases.map(\.rawValue) == Array(0...14))
        #expect(
            names == [
                "lessThan", "lessThanOrEqual", "greaterThan", "greaterThanOrEqual", "between", "notBetween", "like",
                "equals", "notEquals", "exists", "notExists", "contains", "notContains", "in", "notIn",
            ])
    }

    @Test func theCallFilterOfTheProtocolExample() throws {
        let filter = ContextFilter("floor", .between(6, 8))
        #expect(filter.json.serialized() == #"{"conditions":["floor",[4,6,8]]}"#)
        #expect(try ContextFilter(json: parse(#"{"conditions":["floor",[4,6,8]]}"#)) == filter)
    }

    /// Received filters are written back byte for byte, including odd operand counts JS lets through.
    @Test(arguments: [
        #"{}"#,
        #"{"conditions":["floor",[4,6,8]]}"#,
        #"{"conditions":{"and":[["a.b",[7,"x"]],[["a.b","c"],[9]],[[],[9]],[".",[7,{"":1}]]]}}"#,
        #"{"conditions":{"or":[]}}"#,
        #"{"conditions":{"and":[]}}"#,
        #"{"conditions":["x",[13,[1,"2",null,{"a":[true]}]]]}"#,
        #"{"conditions":["x",[7]]}"#,
        #"{"conditions":["x",[9,1,2,3]]}"#,
        #"{"conditions":["name",[6,"Abc%"]],"orderByProperties":[["name","Asc"],[["a.b","c"],"Desc"],["","Asc"]],"take":10,"skip":20}"#,
        #"{"orderByProperties":[],"take":0}"#,
    ])
    func objectFiltersRoundTrip(text: String) throws {
        let filter = try ObjectFilter(json: parse(text))
        #expect(filter.json.serialized() == text)
        let context = try ContextFilter(json: parse(text))
        #expect(context == filter.contextFilter)
    }

    @Test func encodingWritesNoNullsAndKeepsJavaScriptMemberOrder() {
        let filter = ObjectFilter(
            .or([ObjectFilterCondition(ObjectFilterProperty(names: ["a.b", "c"]), .notExists)]),
            orderByProperties: [ObjectFilterOrdering("name", .descending)], skip: 5)
        #expect(
            filter.json.serialized()
                == #"{"conditions":{"or":[[["a.b","c"],[10]]]},"orderByProperties":[["name","Desc"]],"skip":5}"#)
        #expect(ObjectFilter().json.serialized() == "{}")
        #expect(ContextFilter().json.serialized() == "{}")
    }

    /// Accepted as JS accepts them, written back in the meaning the agent gives them.
    @Test(arguments: [
        (#"{"conditions":{}}"#, #"{}"#),
        (#"{"conditions":{"x":1},"extra":true}"#, #"{}"#),
        (#"{"conditions":{"and":[],"x":1}}"#, #"{"conditions":{"and":[]}}"#),
        (#"{"conditions":["a",[-0]]}"#, #"{"conditions":["a",[0]]}"#),
        (#"{"conditions":["a",[7.0e0,1]]}"#, #"{"conditions":["a",[7,1]]}"#),
        (#"{"take":2.5,"skip":-3}"#, #"{"take":3,"skip":0}"#),
        (#"{"take":-1,"skip":1e300}"#, #"{"take":0,"skip":9007199254740992}"#),
    ])
    func lenientInputIsNormalized(text: String, written: String) throws {
        #expect(try ObjectFilter(json: parse(text)).json.serialized() == written)
    }

    /// Everything Coaty JS's validators reject, with where and why.
    @Test(arguments: [
        ("null", "$", "expected a filter object, found null"),
        ("[]", "$", "expected a filter object, found array"),
        (#"{"conditions":null}"#, "$.conditions", "found null"),
        (#"{"conditions":5}"#, "$.conditions", "found number"),
        (#"{"conditions":["a"]}"#, "$.conditions", "2 elements"),
        (#"{"conditions":["a",[9],[9]]}"#, "$.conditions", "found 3"),
        (#"{"conditions":["",[9]]}"#, "$.conditions[0]", "must not be empty"),
        (#"{"conditions":[5,[9]]}"#, "$.conditions[0]", "found number"),
        (#"{"conditions":[null,[9]]}"#, "$.conditions[0]", "found null"),
        (#"{"conditions":[["a",1],[9]]}"#, "$.conditions[0][1]", "found number"),
        (#"{"conditions":["a",9]}"#, "$.conditions[1]", "expected a filter expression"),
        (#"{"conditions":["a",[]]}"#, "$.conditions[1]", "needs an operator"),
        (#"{"conditions":["a",["7"]]}"#, "$.conditions[1][0]", "expected an operator code, found string"),
        (#"{"conditions":["a",[15]]}"#, "$.conditions[1][0]", "15 is not a filter operator code"),
        (#"{"conditions":["a",[-1]]}"#, "$.conditions[1][0]", "-1 is not a filter operator code"),
        (#"{"conditions":["a",[1.5]]}"#, "$.conditions[1][0]", "1.5 is not a filter operator code"),
        (#"{"conditions":{"and":[],"or":[]}}"#, "$.conditions", "exclude each other"),
        (#"{"conditions":{"and":[["a",[9]]],"or":null}}"#, "$.conditions", "exclude each other"),
        (#"{"conditions":{"and":null}}"#, "$.conditions.and", "expected an array of filter conditions"),
        (#"{"conditions":{"or":{"a":1}}}"#, "$.conditions.or", "expected an array of filter conditions"),
        (#"{"conditions":{"or":[["a",[9]],["b"]]}}"#, "$.conditions.or[1]", "2 elements"),
        (#"{"conditions":{"and":[["a",[9]],["b",[99]]]}}"#, "$.conditions.and[1][1][0]", "99 is not"),
        (#"{"take":"5"}"#, "$.take", "expected a number, found string"),
        (#"{"skip":null}"#, "$.skip", "expected a number, found null"),
        (#"{"orderByProperties":{}}"#, "$.orderByProperties", "expected an array"),
        (#"{"orderByProperties":null}"#, "$.orderByProperties", "expected an array"),
        (#"{"orderByProperties":[["a","asc"]]}"#, "$.orderByProperties[0][1]", #"expected "Asc" or "Desc""#),
        (#"{"orderByProperties":[["a"]]}"#, "$.orderByProperties[0]", "expected an ordering"),
        (#"{"orderByProperties":[[1,"Asc"]]}"#, "$.orderByProperties[0][0]", "found number"),
        (#"{"orderByProperties":[[["a",null],"Asc"]]}"#, "$.orderByProperties[0][0][1]", "found null"),
    ])
    func malformedObjectFiltersAreRejected(text: String, path: String, reason: String) throws {
        let json = try parse(text)
        let error = try #require(throws: JSONShapeError.self) { try ObjectFilter(json: json) }
        #expect(error.path.description == path)
        #expect(error.reason.contains(reason), "\(error)")
    }

    /// A Call's filter is checked as a ContextFilter: ordering and paging members are not looked at.
    @Test func contextFiltersIgnoreObjectFilterMembers() throws {
        let json = try parse(#"{"conditions":["a",[9]],"take":"x","orderByProperties":null}"#)
        #expect(try ContextFilter(json: json) == ContextFilter("a", .exists))
        #expect(throws: JSONShapeError.self) { try ObjectFilter(json: json) }
    }

    @Test(arguments: [
        #"{"localProperty":"parentObjectId","asProperty":"parent","isOneToOneRelation":true}"#,
        #"{"localProperty":"","asProperty":"","isLocalPropertyArray":false}"#,
        #"[{"localProperty":"a","asProperty":"b"},{"localProperty":"c","asProperty":"d","isLocalPropertyArray":true,"isOneToOneRelation":false}]"#,
        #"[]"#,
    ])
    func joinConditionsRoundTrip(text: String) throws {
        let conditions = try ObjectJoinConditions(json: parse(text))
        #expect(conditions.json.serialized() == text)
    }

    @Test func joinConditionsKeepTheirForm() throws {
        let single = ObjectJoinCondition(localProperty: "locationId", asProperty: "location", isOneToOneRelation: true)
        #expect(ObjectJoinConditions.single(single).conditions == [single])
        #expect(
            single.json.serialized()
                == #"{"localProperty":"locationId","asProperty":"location","isOneToOneRelation":true}"#)
    }

    @Test(arguments: [
        (#"{"localProperty":1,"asProperty":"x"}"#, "$.localProperty", "expected a string"),
        (#"{"asProperty":"x"}"#, "$", #"missing required member "localProperty""#),
        (
            #"{"localProperty":"a","asProperty":"b","isOneToOneRelation":"yes"}"#, "$.isOneToOneRelation",
            "expected a boolean"
        ),
        (
            #"{"localProperty":"a","asProperty":"b","isLocalPropertyArray":null}"#, "$.isLocalPropertyArray",
            "expected a boolean"
        ),
        (#"[{"localProperty":"a","asProperty":"b"},3]"#, "$[1]", "expected an object"),
        ("null", "$", "expected an object"),
    ])
    func malformedJoinConditionsAreRejected(text: String, path: String, reason: String) throws {
        let json = try parse(text)
        let error = try #require(throws: JSONShapeError.self) { try ObjectJoinConditions(json: json) }
        #expect(error.path.description == path)
        #expect(error.reason.contains(reason), "\(error)")
    }

    @Test func propertiesKeepTheirNotation() throws {
        #expect(ObjectFilterProperty("a.b.c").names == ["a", "b", "c"])
        #expect(ObjectFilterProperty("").names == [""])
        #expect(ObjectFilterProperty("..").names == ["", "", ""])
        #expect(ObjectFilterProperty(names: ["a.b"]).names == ["a.b"])
        #expect(ObjectFilterProperty("a") != ObjectFilterProperty(names: ["a"]))
        #expect(ObjectFilterProperty(names: ["a.b", ""]).json.serialized() == #"["a.b",""]"#)
    }
}
