import CoatyJSON

/// A JsonLogic expression (jsonlogic.com), checked when it is read and evaluated with the semantics of
/// json-logic-js.
///
/// Reading rejects what json-logic-js would only notice while evaluating, or never: unknown operators, wrong
/// operand counts, objects that are not an operation, and nesting beyond `Limits.maximumDepth`. Every problem
/// comes with the JSON path of the part at fault.
///
/// One deliberate difference from json-logic-js: arrays and objects compare by content in `==`, `===`, `!=`,
/// `!==` and `in`, where JavaScript compares object identity (which a JSON rule cannot see).
public struct JsonLogicExpression: Sendable, Hashable, CustomStringConvertible {
    public struct Limits: Sendable, Hashable {
        /// How deeply operations and arrays may nest. Evaluation recurses once per level.
        public var maximumDepth: Int
        /// Work one evaluation may do: one unit per operation or array evaluated, plus one per element or byte
        /// that `merge`, `cat`, `substr`, `map` and `filter` produce. Keeps a hostile rule (say, a `reduce` that
        /// doubles a string each step) from running away.
        public var evaluationBudget: Int

        public init(maximumDepth: Int = 64, evaluationBudget: Int = 1_000_000) {
            self.maximumDepth = maximumDepth
            self.evaluationBudget = evaluationBudget
        }
    }

    /// The expression as written.
    public let json: JSONValue
    public let limits: Limits
    let root: Node

    /// Reads an expression. `path` says where `json` sits in its document, for the paths in errors.
    public init(_ json: JSONValue, at path: JSONPath = .root, limits: Limits = Limits()) throws(JsonLogicSyntaxError) {
        var parser = Parser(maximumDepth: limits.maximumDepth)
        let root = parser.parse(json, at: path, depth: 1)
        guard parser.problems.isEmpty else { throw JsonLogicSyntaxError(problems: parser.problems) }
        self.json = json
        self.limits = limits
        self.root = root
    }

    /// The value of the expression for `data`.
    public func evaluate(with data: JSONValue) throws(JsonLogicEvaluationError) -> JSONValue {
        var evaluator = Evaluator(budget: limits.evaluationBudget, limit: limits.evaluationBudget)
        return try evaluator.evaluate(root, data: data)
    }

    /// Whether the value of the expression for `data` is truthy in JsonLogic's sense.
    public func isSatisfied(by data: JSONValue) throws(JsonLogicEvaluationError) -> Bool {
        try evaluate(with: data).isJsonLogicTruthy
    }

    public var description: String { json.serialized() }

    /// The paths of the `var`s whose path is written as a literal, split at the dots, in the order they appear.
    /// Computed paths (`{"var": {"cat": ...}}`) cannot be known before evaluating and are left out.
    public var literalVariablePaths: [[String]] {
        var paths: [[String]] = []
        root.collectVariablePaths(into: &paths)
        return paths
    }

    public static func == (lhs: JsonLogicExpression, rhs: JsonLogicExpression) -> Bool {
        lhs.json == rhs.json && lhs.limits == rhs.limits
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(json)
    }
}

extension JSONValue {
    /// Truthiness as JsonLogic defines it: JavaScript's, except that an empty array is false.
    /// So `0`, `""`, `null`, `false`, `NaN` and `[]` are false; `"0"`, `"false"`, `[0]` and `{}` are true.
    public var isJsonLogicTruthy: Bool {
        if case .array(let elements) = self { return !elements.isEmpty }
        return JavaScript.toBoolean(self)
    }
}

/// Everything wrong with an expression, each with its JSON path. Never empty.
public struct JsonLogicSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public var problems: [JSONShapeError]

    public var description: String {
        problems.map(\.description).joined(separator: "\n")
    }
}

/// Why an expression could not be evaluated, and which operation failed.
public struct JsonLogicEvaluationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: JSONPath
    public var reason: String

    public init(path: JSONPath, reason: String) {
        self.path = path
        self.reason = reason
    }

    public var description: String { "\(path): \(reason)" }
}

indirect enum Node: Sendable {
    case literal(JSONValue)
    case array([Node], JSONPath)
    case operation(Operation)
    /// `var` with a path written as a literal, split once when read: most of what conditions do.
    case variable(VariablePath)
}

extension Node {
    func collectVariablePaths(into paths: inout [[String]]) {
        switch self {
        case .literal:
            break
        case .array(let elements, _):
            for element in elements { element.collectVariablePaths(into: &paths) }
        case .operation(let operation):
            for operand in operation.operands { operand.collectVariablePaths(into: &paths) }
        case .variable(let variable):
            paths.append(variable.components.map(String.init))
            variable.fallback?.collectVariablePaths(into: &paths)
        }
    }
}

struct VariablePath: Sendable {
    /// Empty for the whole data.
    let components: [Substring]
    let fallback: Node?
    let path: JSONPath
}

struct Operation: Sendable {
    let op: Operator
    let operands: [Node]
    let path: JSONPath
}

struct Parser {
    let maximumDepth: Int
    var problems: [JSONShapeError] = []

    init(maximumDepth: Int) {
        self.maximumDepth = maximumDepth
    }

    mutating func parse(_ json: JSONValue, at path: JSONPath, depth: Int) -> Node {
        switch json {
        case .null, .bool, .number, .string:
            return .literal(json)
        case .array(let elements):
            guard enter(depth, at: path) else { return .literal(.null) }
            let nodes = elements.enumerated().map { parse($1, at: path.appending($0), depth: depth + 1) }
            return fold(nodes, at: path)
        case .object(let object):
            guard enter(depth, at: path) else { return .literal(.null) }
            return parseOperation(object, at: path, depth: depth)
        }
    }

    private mutating func enter(_ depth: Int, at path: JSONPath) -> Bool {
        guard depth <= maximumDepth else {
            problems.append(
                JSONShapeError(path: path, reason: "the expression nests deeper than \(maximumDepth) levels"))
            return false
        }
        return true
    }

    /// An array of literals is itself a literal, so evaluating it costs nothing.
    private func fold(_ nodes: [Node], at path: JSONPath) -> Node {
        var values: [JSONValue] = []
        values.reserveCapacity(nodes.count)
        for node in nodes {
            guard case .literal(let value) = node else { return .array(nodes, path) }
            values.append(value)
        }
        return .literal(.array(values))
    }

    private mutating func parseOperation(_ object: JSONObject, at path: JSONPath, depth: Int) -> Node {
        guard object.count == 1, let member = object.members.first else {
            let found =
                object.isEmpty
                ? "found an empty object"
                : "found \(object.count) keys (\(object.keys.map { JSONValue.string($0).serialized() }.joined(separator: ", ")))"
            problems.append(
                JSONShapeError(
                    path: path, reason: "an operation must be an object with exactly one operator key; \(found)"))
            return .literal(.null)
        }
        let operatorPath = path.appending(member.key)
        guard let op = Operator(rawValue: member.key) else {
            problems.append(JSONShapeError(path: operatorPath, reason: unknownOperatorReason(member.key)))
            return .literal(.null)
        }
        // As in json-logic-js, a single operand may be written without the array: {"var": "x"}.
        let operandValues: [(JSONValue, JSONPath)]
        if case .array(let elements) = member.value {
            operandValues = elements.enumerated().map { ($1, operatorPath.appending($0)) }
        } else {
            operandValues = [(member.value, operatorPath)]
        }
        guard op.arity.contains(operandValues.count) else {
            problems.append(
                JSONShapeError(
                    path: operatorPath,
                    reason: "\"\(op.rawValue)\" takes \(op.arityDescription()), found \(operandValues.count)"))
            return .literal(.null)
        }
        checkOperandShapes(op, operandValues)
        let operands = operandValues.map { parse($0.0, at: $0.1, depth: depth + 1) }
        if op == .variable, let components = VariablePath.components(of: operands.first) {
            return .variable(
                VariablePath(components: components, fallback: operands.element(at: 1), path: operatorPath))
        }
        return .operation(Operation(op: op, operands: operands, path: operatorPath))
    }

    /// Catches literal operands that can only be mistakes.
    private mutating func checkOperandShapes(_ op: Operator, _ operands: [(JSONValue, JSONPath)]) {
        switch op {
        case .variable:
            guard let (value, path) = operands.first else { return }
            switch value {
            case .bool, .array:
                problems.append(
                    JSONShapeError(
                        path: path,
                        reason: "a variable path must be a string, a number or null, found \(value.typeName)"))
            default:
                break
            }
        case .missingSome:
            let (keys, path) = operands[1]
            switch keys {
            case .array, .object: break
            default:
                problems.append(
                    JSONShapeError(
                        path: path, reason: "\"missing_some\" needs an array of keys, found \(keys.typeName)"))
            }
        default:
            break
        }
    }

    private func unknownOperatorReason(_ name: String) -> String {
        var reason = "unknown operator \(JSONValue.string(name).serialized())"
        let suggestions: [String: String] = [
            "=": "==", "&&": "and", "||": "or", "not": "!", "<>": "!=", "concat": "cat", "contains": "in",
        ]
        if let known = Operator(rawValue: name.lowercased()) {
            reason += " (did you mean \"\(known.rawValue)\"?)"
        } else if let suggestion = suggestions[name.lowercased()] {
            reason += " (did you mean \"\(suggestion)\"?)"
        }
        return reason
    }
}

extension VariablePath {
    /// The components of a literal path; nil when the path is computed.
    static func components(of operand: Node?) -> [Substring]? {
        guard let operand else { return [] }
        guard case .literal(let path) = operand else { return nil }
        if path.isNull || path == "" { return [] }
        return JavaScript.toString(path).split(separator: ".", omittingEmptySubsequences: false)
    }
}
