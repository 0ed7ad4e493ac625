import CoatyJSON
import JsonLogic
import Testing

/// Parses both texts as JSON and evaluates the rule on the data.
func evaluate(_ rule: String, data: String = "null") throws -> JSONValue {
    let expression = try JsonLogicExpression(JSONValue(parsing: rule))
    return try expression.evaluate(with: JSONValue(parsing: data))
}

func json(_ text: String) throws -> JSONValue {
    try JSONValue(parsing: text)
}

/// The syntax problems of a rule, written as "path: reason".
func syntaxProblems(_ rule: String, at path: JSONPath = .root) throws -> [String] {
    do {
        _ = try JsonLogicExpression(JSONValue(parsing: rule), at: path)
        return []
    } catch let error as JsonLogicSyntaxError {
        return error.problems.map(\.description)
    }
}

/// A case of a table: the rule, the data and the expected result, all as JSON text.
struct Case: Sendable, CustomTestStringConvertible {
    var rule: String
    var data: String
    var expected: String

    init(_ rule: String, _ expected: String, data: String = "null") {
        self.rule = rule
        self.data = data
        self.expected = expected
    }

    var testDescription: String { "\(rule) with \(data) is \(expected)" }
}
