import CoatyJSON
import Testing

@testable import CoatyModel

/// The object and the conditions of the "Object filters" test of Coaty JS (`object.spec.ts`).
enum ObjectFilterConformance {
    static let object: JSONValue = {
        let text = #"""
            {"name":"TestObjectFilter","coreType":"CoatyObject","objectType":"coaty.CoatyObject",
             "objectId":"5c0a5f9e-2b53-4b76-8d7a-0d5bb1d0e0a1","filterBoolean":true,"filterNumber":42,
             "filterString":"Abc","filterLikeString":"hello abc\\d_","filterLikeString1":".*+?^${}()|[]",
             "filterArray":[42,[43,44],[[45,46]]],
             "filterObject":{"foo":42,"bar":[42,43],"baz":{"mumble":[42,45]}},"filterObject1":{"foo":42},
             " ":"blank","":{"":{"":1}},".":{".":{".":2}}}
            """#
        do { return try JSONValue(parsing: text) } catch { fatalError("\(error)") }
    }()

    /// Each condition holds for `object`.
    static let matching: [ObjectFilterCondition] = [
        .init(.init(names: []), .exists),
        .init("foo", .notExists),
        .init("foo.bar", .notExists),
        .init("filterUndefined", .notExists),
        .init("filterBoolean", .exists),
        .init("filterBoolean", .equals(true)),
        .init("filterBoolean", .notEquals(false)),
        .init("filterNumber", .equals(42)),
        .init("filterNumber", .notEquals(43)),
        .init("filterString", .equals("Abc")),
        .init("filterString", .notEquals("abc")),
        .init("filterArray", .equals([42, [43, 44], [[45, 46]]])),
        .init("filterArray", .notEquals([42, [43, 44], [[45, 47]]])),
        .init("filterObject", .equals(["foo": 42, "bar": [42, 43], "baz": ["mumble": [42, 45]]])),
        .init("filterObject", .notEquals(["foo": 42, "bar": [42, 43], "baz": ["mumble": [43, 45]]])),
        .init("filterObject.foo", .equals(42)),
        .init("filterObject.bar", .equals([42, 43])),
        .init("filterObject.baz", .equals(["mumble": [42, 45]])),
        .init("filterObject.baz.mumble", .equals([42, 45])),
        .init(" ", .equals("blank")),
        .init("", .equals(["": ["": 1]])),
        .init(".", .equals(["": 1])),
        .init("..", .equals(1)),
        .init(.init(names: ["."]), .equals([".": [".": 2]])),
        .init(.init(names: [".", "."]), .equals([".": 2])),
        .init(.init(names: [".", ".", "."]), .equals(2)),
        .init("filterNumber", .lessThan(43)),
        .init("filterString", .lessThan("Abce")),
        .init("filterNumber", .lessThanOrEqual(42)),
        .init("filterString", .lessThanOrEqual("ABc")),
        .init("filterNumber", .greaterThan(41)),
        .init("filterString", .greaterThan("abc")),
        .init("filterNumber", .greaterThanOrEqual(42)),
        .init("filterString", .greaterThanOrEqual("Abc")),
        .init("filterNumber", .between(42, 42)),
        .init("filterNumber", .between(41, 43)),
        .init("filterNumber", .between(43, 41)),
        .init("filterString", .between("Abc", "Abc")),
        .init("filterString", .between("Abb", "Abd")),
        .init("filterString", .between("Abd", "Abb")),
        .init("filterNumber", .notBetween(43, 47)),
        .init("filterNumber", .notBetween(47, 43)),
        .init("filterNumber", .notBetween(41, 41)),
        .init("filterString", .notBetween("Abd", "Abf")),
        .init("filterString", .notBetween("Abf", "Abd")),
        .init("filterString", .notBetween("Abb", "Abb")),
        .init("filterString", .like("Abc")),
        .init("filterString", .like("Ab_")),
        .init("filterString", .like("_b_")),
        .init("filterString", .like("___")),
        .init("filterString", .like("%")),
        .init("filterString", .like("%_")),
        .init("filterString", .like("%__")),
        .init("filterString", .like("%___")),
        .init("filterString", .like("_%_")),
        .init("filterString", .like("__%_")),
        .init("filterString", .like("_%")),
        .init("filterString", .like("__%")),
        .init("filterString", .like("___%")),
        .init("filterString", .like("A%bc")),
        .init("filterString", .like("A%c")),
        .init("filterString", .like("A%")),
        .init("filterString", .like("%c")),
        .init("filterString", .like("%%")),
        .init("filterLikeString", .like(#"%a_c\\d\_"#)),
        .init("filterLikeString1", .like(".*+?^${}()|[]")),
        .init("filterArray", .contains(42)),
        .init("filterArray", .contains([42, [43], [[46]]])),
        .init("filterObject", .contains(["foo": 42, "bar": [42], "baz": ["mumble": [45]]])),
        .init("filterArray", .notContains(43)),
        .init("filterArray", .notContains([41, [45], [[43]]])),
        .init("filterObject", .notContains(["foo": 43])),
        .init("filterObject", .notContains(["bar": [44]])),
        .init("filterObject", .notContains(["baz": ["mumble": [43]]])),
        .init("filterObject", .notContains(["mumble": [45]])),
        .init("filterNumber", .in([43, 42, "42"])),
        .init("filterString", .in([43, 42, "Abc"])),
        .init("filterBoolean", .in([43, true, "Abc"])),
        .init("filterObject1", .in([["bar": 43], ["foo": 42]])),
        .init("filterNumber", .notIn([43, 41, "42"])),
        .init("filterString", .notIn([43, 42, "abc"])),
        .init("filterBoolean", .notIn([43, false, "Abc"])),
        .init("filterObject1", .notIn([["foo": 42, "bar": 43]])),
    ]

    /// Each condition fails for `object`: the other side of every operator.
    static let failing: [ObjectFilterCondition] = [
        .init(.init(names: []), .notExists),
        .init("filterBoolean", .notExists),
        .init("foo", .exists),
        .init("foo.bar", .equals(.null)),
        .init("filterNumber", .equals("42")),
        .init("filterString", .equals("abc")),
        .init("filterArray", .equals([42, [44, 43], [[45, 46]]])),
        .init("filterObject", .equals(["foo": 42, "bar": [42, 43]])),
        .init("filterObject", .notEquals(["baz": ["mumble": [42, 45]], "bar": [42, 43], "foo": 42])),
        .init("", .equals(["": 1])),
        .init("...", .exists),
        .init(.init(names: [".", ".", ".", "."]), .exists),
        .init("filterNumber", .lessThan(42)),
        .init("filterString", .lessThan("abc")),
        .init("filterNumber", .lessThanOrEqual(41)),
        .init("filterString", .lessThanOrEqual("abc")),
        .init("filterNumber", .greaterThan(42)),
        .init("filterString", .greaterThan("ABc")),
        .init("filterNumber", .greaterThanOrEqual(43)),
        .init("filterString", .greaterThanOrEqual("Abd")),
        .init("filterNumber", .between(43, 47)),
        .init("filterNumber", .between(41, 41)),
        .init("filterString", .between("Abd", "Abf")),
        .init("filterString", .between("ABc", "Abd")),
        .init("filterNumber", .notBetween(41, 43)),
        .init("filterNumber", .notBetween(43, 41)),
        .init("filterString", .notBetween("Abb", "Abd")),
        .init("filterString", .like("abc")),
        .init("filterString", .like("Ab")),
        .init("filterString", .like("____")),
        .init("filterString", .like("%b")),
        .init("filterString", .like(#"Ab\_"#)),
        .init("filterLikeString", .like(#"%a_c\d\_"#)),
        .init("filterNumber", .like("42")),
        .init("filterArray", .contains(43)),
        .init("filterArray", .contains([42, [45]])),
        .init("filterObject", .contains(["mumble": [45]])),
        .init("filterObject", .contains(["baz": ["mumble": 45]])),
        .init("filterArray", .notContains([42])),
        .init("filterNumber", .in([43, "42"])),
        .init("filterObject1", .in([["foo": 42, "bar": 43]])),
        .init("filterNumber", .notIn([41, 42])),
        .init("filterObject1", .notIn([["foo": 42]])),
    ]
}

@Suite struct ObjectMatcherTests {
    typealias Conformance = ObjectFilterConformance

    @Test func noFilterAndNoConditionsMatchEverything() {
        #expect(ObjectMatcher.matches(Conformance.object, filter: nil))
        #expect(ObjectMatcher.matches(Conformance.object, filter: ContextFilter()))
        #expect(ObjectMatcher.matches(.null, filter: ContextFilter()))
    }

    @Test func theWholeListMatchesUnderAndAndOr() {
        #expect(Conformance.matching.count == 83)
        #expect(ObjectMatcher.matches(Conformance.object, filter: ContextFilter(.and(Conformance.matching))))
        #expect(ObjectMatcher.matches(Conformance.object, filter: ContextFilter(.or(Conformance.matching))))
    }

    @Test(arguments: ObjectFilterConformance.matching)
    func eachConditionMatchesAlone(condition: ObjectFilterCondition) {
        #expect(ObjectMatcher.matches(Conformance.object, filter: ContextFilter(.condition(condition))))
    }

    @Test(arguments: ObjectFilterConformance.failing)
    func eachCounterConditionFailsAlone(condition: ObjectFilterCondition) {
        #expect(!ObjectMatcher.matches(Conformance.object, filter: ContextFilter(.condition(condition))))
        #expect(
            !ObjectMatcher.matches(Conformance.object, filter: ContextFilter(.and(Conformance.matching + [condition]))))
    }

    @Test func oneFailingConditionFailsAndOneMatchingConditionSatisfiesOr() {
        #expect(!ObjectMatcher.matches(Conformance.object, filter: ContextFilter(.or(Conformance.failing))))
        #expect(
            ObjectMatcher.matches(
                Conformance.object, filter: ContextFilter(.or(Conformance.failing + [Conformance.matching[40]]))))
        #expect(ObjectMatcher.matches(Conformance.object, filter: ContextFilter(.and([]))))
        #expect(!ObjectMatcher.matches(Conformance.object, filter: ContextFilter(.or([]))))
    }

    /// The list travels as JS writes it and still matches after decoding (but for the empty dot path, which JS's
    /// validator rejects on the wire).
    @Test func theListMatchesAfterAWireRoundTrip() throws {
        let wireable = Conformance.matching.filter { $0.property != "" }
        let text = ObjectFilter(.and(wireable)).json.serialized()
        #expect(text.hasPrefix(#"{"conditions":{"and":[[[],[9]],["foo",[10]],["foo.bar",[10]],"#))
        #expect(text.contains(#"["filterNumber",[4,43,41]]"#))
        #expect(text.contains(#"["filterLikeString",[6,"%a_c\\\\d\\_"]]"#))
        let filter = try ObjectFilter(json: JSONValue(parsing: text))
        #expect(ObjectMatcher.matches(Conformance.object, filter: filter.contextFilter))
    }

    /// Random objects and filters against the answers of Coaty JS's own matcher.
    @Test func agreesWithCoatyJavaScriptOnRandomFilters() throws {
        #expect(MatcherVectors.cases.count > 200)
        for (objectText, filterText, expected) in MatcherVectors.cases {
            let filter = try ContextFilter(json: JSONValue(parsing: filterText))
            let object = try JSONValue(parsing: objectText)
            #expect(ObjectMatcher.matches(object, filter: filter) == expected, "\(objectText) \(filterText)")
        }
    }

    /// An undefined property fails every operator but NotExists, whatever the operands.
    @Test(arguments: ObjectFilterOperator.allCases)
    func undefinedPropertiesOnlyMatchNotExists(operator: ObjectFilterOperator) {
        for operands: [JSONValue] in [[], [.null], [1, 2], [[]], ["%"]] {
            let condition = ObjectFilterCondition(
                "missing.property", ObjectFilterExpression(`operator`, operands: operands))
            #expect(
                ObjectMatcher.matches(Conformance.object, filter: ContextFilter(.condition(condition)))
                    == (`operator` == .notExists))
        }
    }

    // MARK: Property paths

    @Test(arguments: [
        ("filterArray.0", 42 as JSONValue?),
        ("filterArray.1.1", 44),
        ("filterArray.2.0.1", 46),
        ("filterArray.length", 3),
        ("filterArray.1.length", 2),
        ("filterArray.3", nil),
        ("filterArray.01", nil),
        ("filterArray.-1", nil),
        ("filterArray. 1", nil),
        ("filterArray.4294967295", nil),
        ("filterString.length", nil),
        ("filterString.0", nil),
        ("filterNumber.x", nil),
        ("filterObject.bar.1", 43),
        ("filterObject.length", nil),
        ("filterObject.toString", nil),
    ])
    func pathsWalkObjectsAndArraysAsJavaScriptPropertyAccess(path: String, expected: JSONValue?) {
        #expect(ObjectFilterProperty(path).value(in: Conformance.object) == expected)
    }

    @Test func objectsWithIndexLikeKeys() {
        let object: JSONValue = ["0": ["00": "x"], "a.b": ["c": true]]
        #expect(ObjectFilterProperty("0.00").value(in: object) == "x")
        #expect(ObjectFilterProperty("a.b.c").value(in: object) == nil)
        #expect(ObjectFilterProperty(names: ["a.b", "c"]).value(in: object) == true)
    }

    // MARK: Operators

    private func holds(_ value: JSONValue, _ expression: ObjectFilterExpression) -> Bool {
        ObjectMatcher.matches(["v": value], filter: ContextFilter("v", expression))
    }

    /// Comparisons that are not between two strings follow JavaScript's `<`: numbers, numeric strings, `null` as
    /// 0, booleans as 0 and 1, arrays as their joined text; a NaN side makes every comparison false.
    @Test func relationalComparisonsOfMixedTypes() {
        #expect(holds(42, .lessThan("43")))
        #expect(holds("42", .greaterThan(41.5)))
        #expect(holds(" 0x2A ", .equals(" 0x2A ")) && holds(" 0x2A ", .greaterThanOrEqual(42)))
        #expect(holds("1e3", .greaterThan(999)))
        #expect(holds("", .lessThanOrEqual(0)) && holds("", .greaterThanOrEqual(0)))
        #expect(!holds(42, .lessThan("abc")) && !holds(42, .greaterThanOrEqual("abc")))
        #expect(!holds("Infinityx", .greaterThan(0)))
        #expect(holds("-Infinity", .lessThan(-1e308)))
        #expect(holds(.null, .lessThan(1)) && holds(.null, .greaterThan(-1)) && holds(.null, .lessThanOrEqual(0)))
        #expect(holds(true, .greaterThan(0)) && holds(false, .lessThan(true)))
        #expect(holds(["abd"], .greaterThan(["abc"])))  // joined text, by code units
        #expect(holds([1, 2], .equals([1, 2])) && holds([1, 2], .lessThan("1,3")))
        #expect(!holds(["a": 1], .lessThan(1)) && !holds(["a": 1], .greaterThanOrEqual(1)))
        #expect(!holds(42, .lessThan(.null)) && holds(42, .greaterThan(.null)) && !holds(42, .lessThanOrEqual(.null)))
        #expect(!holds(42, ObjectFilterExpression(.lessThan, operands: [])))
        #expect(!holds(42, ObjectFilterExpression(.greaterThanOrEqual, operands: [])))
    }

    @Test func betweenAndNotBetweenEdges() {
        #expect(holds(5, .between(5, 5)) && !holds(5, .notBetween(5, 5)))
        #expect(holds("b", .between("B", "a")))  // swapped by collation: a < b < B
        #expect(holds("b", .notBetween("c", "C")))
        // Unless all three are strings, JavaScript's comparison applies, by code units for text: "B" < "a".
        #expect(holds("a", .between(["B"], "b")) && !holds("a", .between("B", "b")))
        // A missing (undefined, not null) or NaN bound fails its half: between is false, not-between depends on
        // the other bound.
        #expect(!holds(5, ObjectFilterExpression(.between, operands: [1])))
        #expect(holds(5, ObjectFilterExpression(.notBetween, operands: [9])))
        #expect(!holds(5, ObjectFilterExpression(.notBetween, operands: [1])))
        #expect(holds(5, .notBetween(1, .null)))  // null is 0: swapped to 0...1
        #expect(!holds(5, .between("x", 10)) && !holds(5, .notBetween("x", 10)))
        #expect(holds(5, .notBetween("x", 1)) && holds(5, .notBetween(10, "x")))
    }

    @Test func stringComparisonsUseCollationButEqualityUsesCodeUnits() {
        let decomposed = "e\u{301}"
        #expect(
            holds("é", .lessThanOrEqual(.string(decomposed))) && holds("é", .greaterThanOrEqual(.string(decomposed))))
        #expect(!holds("é", .equals(.string(decomposed))) && holds("é", .notEquals(.string(decomposed))))
        #expect(!holds("é", .in([.string(decomposed)])))
        #expect(holds("Zürich", .between("zurich", "Zz")))
        #expect(holds("résumé", .greaterThan("resume")) && holds("résumé", .lessThan("resumf")))
    }

    @Test(arguments: [
        ("abc", "abc", true),
        ("abc", "ABC", false),
        ("abc", "a_c", true),
        ("abc", "a__c", false),
        ("", "%", true),
        ("", "_", false),
        ("a\nb", "a_b", false),  // wildcards never match a line terminator
        ("a\nb", "a%", false),
        ("a\nb", "a\n%", true),
        ("a\u{2028}b", "a%b", false),
        ("a\rb", "%_%", false),
        ("😀", "_", false),  // one wildcard is one UTF-16 code unit
        ("😀", "__", true),
        ("é", "_", true),
        ("e\u{301}", "_", false),
        ("50%", #"50\%"#, true),
        ("500", #"50\%"#, false),
        ("a_b", #"a\_b"#, true),
        ("axb", #"a\_b"#, false),
        (#"a\b"#, #"a\\b"#, true),
        ("ab", #"a\b"#, true),  // a backslash before an ordinary character is dropped
        ("a", #"a\"#, true),  // and a trailing one ignored
        ("a.c", "a.c", true),
        ("abc", "a.c", false),
        ("a+b", "a+b", true),
        ("(x)", "(_)", true),
        ("[x]", "[%]", true),
        ("abcabcabcabcabcabcabcabcabcabcx", "%a%b%c%a%b%c%a%b%c%y", false),
        ("banana", "%an%an%", true),
        ("banana", "b%%%a", true),
    ])
    func like(text: String, pattern: String, matches: Bool) {
        #expect(holds(.string(text), .like(pattern)) == matches)
    }

    @Test func likeNeedsStringsOnBothSides() {
        #expect(!holds(42, .like("42")))
        #expect(!holds("42", ObjectFilterExpression(.like, operands: [42])))
        #expect(!holds("42", ObjectFilterExpression(.like, operands: [])))
    }

    /// The examples of Coaty JS's `contains` documentation, and more: (container, contained) as JSON text.
    @Test(arguments: [
        (#""foo""#, #""foo""#, true),
        ("[1,2,3]", "[]", true),
        ("[1,2,3]", "[3,1]", true),
        ("[1,2,3]", "[3,1,3,1]", true),
        ("[1,2,3]", "[3,1,5]", false),
        ("[1,[2,3,4],3]", "[3,[3,2]]", true),
        ("[1,[2,3,4],3]", "[3,[3,1]]", false),
        (#"{"foo":1,"bar":2}"#, #"{"bar":2}"#, true),
        (#"{"foo":1,"bar":2}"#, #"{"bar":2,"foo":1}"#, true),
        (#"{"foo":1,"bar":2}"#, #"{"bar":2,"foo":2}"#, false),
        (#"{"foo":{"bar":"baz"}}"#, #"{"foo":{}}"#, true),
        (#"{"foo":{"bar":"baz"}}"#, #"{"bar":"baz"}"#, false),
        (#"[1,{"foo":[{"bar":[1,2,3]},2,3]}]"#, #"[{"foo":[{"bar":[3]}]}]"#, true),
        ("[1,2,3]", "3", true),  // the top-level exception
        ("[[1,2]]", "[1]", false),  // but only at the top
        (#"[null,"a"]"#, "null", true),
        (#"[{"a":1}]"#, #"{"a":1}"#, false),
        (#"{"0":"a","1":"b"}"#, #"["b"]"#, false),  // an array operand is looked up by its indices
        (#"{"0":"a","1":"b"}"#, #"["a"]"#, true),
        (#"{"a":1}"#, "{}", true),
        (#"{"a":1}"#, "1", false),
        ("1", "[1]", false),
        ("null", "null", true),
    ])
    func contains(container: String, contained: String, expected: Bool) throws {
        let (container, contained) = (try JSONValue(parsing: container), try JSONValue(parsing: contained))
        #expect(holds(container, .contains(contained)) == expected)
        #expect(holds(container, .notContains(contained)) == !expected)
    }

    /// (value, values) as JSON text.
    @Test(arguments: [
        ("47", #"[1,46,47,"foo"]"#, true),
        ("47", #"[1,46,"47","foo"]"#, false),
        (#"{"foo":47}"#, #"[1,46,{"foo":47},"foo"]"#, true),
        (#"{"foo":47}"#, #"[1,46,{"foo":47,"bar":42},"foo"]"#, false),
        ("[1,2]", "[[1,2]]", true),
        ("null", "[null]", true),
        ("0", "[]", false),
    ])
    func inAndNotIn(value: String, values: String, expected: Bool) throws {
        let value = try JSONValue(parsing: value)
        let values = try #require(try JSONValue(parsing: values).arrayValue)
        #expect(holds(value, .in(values)) == expected)
        #expect(holds(value, .notIn(values)) == !expected)
    }

    /// Where Coaty JS throws while matching, the filter does not match, and AND and OR stop there as JS does.
    @Test func conditionsJavaScriptCannotEvaluateDoNotMatch() {
        #expect(!holds(["a": 1], .contains(.null)) && !holds(["a": 1], .notContains(.null)))
        #expect(!holds(["a": ["b": 1]], .contains(["a": .null])) && !holds(["a": ["b": 1]], .notContains(["a": .null])))
        #expect(
            !holds(1, ObjectFilterExpression(.in, operands: [1]))
                && !holds(1, ObjectFilterExpression(.notIn, operands: [1])))
        #expect(!holds(1, ObjectFilterExpression(.notIn, operands: [])))
        let throwing = ObjectFilterCondition("v", .contains(.null))
        let matching = ObjectFilterCondition("v", .exists)
        let failing = ObjectFilterCondition("v", .notExists)
        let object: JSONValue = ["v": ["a": 1]]
        #expect(!ObjectMatcher.matches(object, filter: ContextFilter(.or([throwing, matching]))))
        #expect(ObjectMatcher.matches(object, filter: ContextFilter(.or([matching, throwing]))))
        #expect(!ObjectMatcher.matches(object, filter: ContextFilter(.and([failing, throwing]))))
    }

    @Test func equalityIsDeepAndIgnoresMemberOrder() {
        #expect(holds(["a": [1, ["b": .null]], "c": "d"], .equals(["c": "d", "a": [1, ["b": .null]]])))
        #expect(!holds(["a": 1], .equals(["a": 1, "b": .null])))
        #expect(!holds([1], .equals(1)) && !holds(["0": 1], .equals([1])))
        #expect(holds(0, .equals(-0.0)))
        #expect(!holds(1, ObjectFilterExpression(.equals, operands: [])))
        #expect(holds(1, ObjectFilterExpression(.notEquals, operands: [])))
    }

    // MARK: Calls

    @Test func callDeliveryFollowsCoaty2() throws {
        let context = try CoatyObject(
            validating: JSONValue(
                parsing:
                    #"{"objectId":"c","name":"ctx","objectType":"coaty.IoContext","coreType":"IoContext","floor":7}"#))
        #expect(ObjectMatcher.matchesCall(filter: ContextFilter("floor", .between(6, 8)), context: context))
        #expect(!ObjectMatcher.matchesCall(filter: ContextFilter("floor", .equals(10)), context: context))
        #expect(!ObjectMatcher.matchesCall(filter: nil, context: context))
        #expect(ObjectMatcher.matchesCall(filter: ContextFilter("floor", .equals(10)), context: nil))
        #expect(ObjectMatcher.matchesCall(filter: nil, context: nil))
        #expect(ObjectMatcher.matchesCall(filter: ContextFilter(), context: context))
    }
}
