import CoatyJSON
import Testing

@testable import CoatyModel

@Suite struct ObjectSelectionTests {
    private let objects: [JSONValue] = {
        let text = #"""
            [{"id":1,"name":"b","n":3,"on":true,"loc":{"floor":2}},
             {"id":2,"name":"A","n":-1,"on":false,"loc":{"floor":1}},
             {"id":3,"name":"a","n":10,"loc":{"floor":2}},
             {"id":4,"name":"é","n":2.5,"on":true,"loc":{"floor":1}},
             {"id":5,"name":"E","n":3,"on":false},
             {"id":6,"n":0,"on":true,"loc":{"floor":2}},
             {"id":7,"name":"f","n":3,"loc":{"floor":1}}]
            """#
        do { return try JSONValue(parsing: text).arrayValue ?? [] } catch { fatalError("\(error)") }
    }()

    private func ids(_ filter: ObjectFilter?) -> [Int] {
        ObjectMatcher.select(objects, filter: filter, json: { $0 }).compactMap { $0["id"]?.intValue }
    }

    private func filter(_ text: String) throws -> ObjectFilter {
        try ObjectFilter(json: JSONValue(parsing: text))
    }

    @Test func withoutOrderingTheInputOrderIsKept() throws {
        #expect(ids(nil) == [1, 2, 3, 4, 5, 6, 7])
        #expect(ids(ObjectFilter()) == [1, 2, 3, 4, 5, 6, 7])
        #expect(try ids(filter(#"{"conditions":["n",[3,3]]}"#)) == [1, 3, 5, 7])
        #expect(try ids(filter(#"{"conditions":["n",[3,3]],"orderByProperties":[]}"#)) == [1, 3, 5, 7])
    }

    /// Undefined first, then the collation order: case and accents only break ties between equal letters.
    @Test func stringsOrderByCollationWithUndefinedFirst() throws {
        #expect(try ids(filter(#"{"orderByProperties":[["name","Asc"]]}"#)) == [6, 3, 2, 1, 5, 4, 7])
        #expect(try ids(filter(#"{"orderByProperties":[["name","Desc"]]}"#)) == [7, 4, 5, 1, 2, 3, 6])
    }

    @Test func numbersAndBooleansOrderByValue() throws {
        #expect(try ids(filter(#"{"orderByProperties":[["n","Asc"]]}"#)) == [2, 6, 4, 1, 5, 7, 3])
        // false before true, undefined first; equal keys keep their input order.
        #expect(try ids(filter(#"{"orderByProperties":[["on","Asc"]]}"#)) == [3, 7, 2, 5, 1, 4, 6])
        #expect(try ids(filter(#"{"orderByProperties":[["on","Desc"]]}"#)) == [1, 4, 6, 2, 5, 3, 7])
    }

    @Test func laterKeysBreakTies() throws {
        let byFloorThenName = try filter(#"{"orderByProperties":[["loc.floor","Asc"],[["name"],"Desc"]]}"#)
        #expect(ids(byFloorThenName) == [5, 7, 4, 2, 1, 3, 6])
    }

    @Test func conditionsThenOrderThenSkipAndTake() throws {
        let page = #"{"conditions":["loc.floor",[9]],"orderByProperties":[["n","Desc"]],"#
        #expect(try ids(filter(page + #""skip":1,"take":2}"#)) == [1, 7])
        #expect(try ids(filter(page + #""skip":0,"take":0}"#)) == [])
        #expect(try ids(filter(page + #""skip":5}"#)) == [2])
        #expect(try ids(filter(page + #""skip":6}"#)) == [])
        #expect(try ids(filter(page + #""take":100}"#)) == [3, 1, 7, 4, 6, 2])
        #expect(try ids(filter(page + #""skip":1.5,"take":1.5}"#)) == [7, 4])
    }

    /// JavaScript's fallback comparison is not a consistent order for mixed types; ranking by type is.
    @Test func mixedTypesRankByType() {
        let values: [JSONValue] = [["x": 1], "a", [1], 2, true, .null, false, "B", 1]
        let objects = values.map { JSONValue.object(["v": $0]) }
        let sorted = ObjectMatcher.select(
            objects, filter: ObjectFilter(orderByProperties: [.init("v", .ascending)]), json: { $0 })
        let expected: [JSONValue] = [.null, false, true, 1, 2, "a", "B", [1], ["x": 1]]
        #expect(sorted.map { $0["v"] } == expected)
    }

    @Test func coatyObjectsAreSelectedByTheirJSON() throws {
        let make = { (name: String, floor: Int) -> CoatyObject in
            var object = CoatyObject(coreType: .ioContext, name: name)
            object["floor"] = .number(Double(floor))
            return object
        }
        let contexts = [make("kitchen", 1), make("attic", 3), make("bedroom", 2), make("Bath", 2)]
        let selected = ObjectMatcher.select(
            contexts,
            filter: ObjectFilter(
                .condition(.init("floor", .greaterThan(1))), orderByProperties: [.init("name", .ascending)]))
        #expect(selected.map(\.name) == ["attic", "Bath", "bedroom"])
    }
}
