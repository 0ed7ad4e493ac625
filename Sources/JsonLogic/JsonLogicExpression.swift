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

    /// Where the expression reads the data it is evaluated with, in the order written: each `var`, and each key
    /// that `missing` or `missing_some` looks up. What the per-element operand of `map`, `filter`, `reduce`,
    /// `all`, `none` and `some` reads is an array element (or `current` and `accumulator`), not the data, and is
    /// not listed.
    public var dataReferences: [JsonLogicDataReference] {
        var references: [JsonLogicDataReference] = []
        root.collectDataReferences(into: &references)
        return references
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

/// A place where an expression reads the data it is evaluated with.
public struct JsonLogicDataReference: Sendable, Hashable {
    public enum Path: Sendable, Hashable {
        /// Written as a literal, split at the dots; empty for the whole data.
        case literal([String])
        /// Known only when evaluating (`{"var": {"cat": ["shared.", ...]}}`, or `missing` of a computed list).
        /// `knownPrefix` is what the path surely starts with: a `cat`'s leading literal string, else "".
        case computed(knownPrefix: String)
    }

    public var path: Path
    /// Where the path is written in the document.
    public var location: JSONPath
    /// Whether a default stands in when the path leads nowhere (`{"var": ["a.b", 0]}`).
    public var hasDefault: Bool

    public init(path: Path, location: JSONPath, hasDefault: Bool) {
        self.path = path
        self.location = location
        self.hasDefault = hasDefault
    }
}

extension Node {
    func collectDataReferences(into references: inout [JsonLogicDataReference]) {
        switch self {
        case .literal:
            break
        case .array(let elements, _):
            for element in elements { element.collectDataReferences(into: &references) }
        case .variable(let variable):
            references.append(
                JsonLogicDataReference(
                    path: .literal(variable.components.map(String.init)), location: variable.location,
                    hasDefault: variable.fallback != nil))
            variable.fallback?.collectDataReferences(into: &references)
        case .operation(let operation):
            operation.collectDataReferences(into: &references)
        }
    }

    /// The leading literal string of a `cat`: what a path computed by this node surely starts with.
    var knownPrefix: String {
        guard case .operation(let operation) = self, operation.op == .cat,
            case .literal(.string(let prefix)) = operation.operands.first
        else { return "" }
        return prefix
    }
}

extension Operation {
    fileprivate func collectDataReferences(into references: inout [JsonLogicDataReference]) {
        switch op {
        case .variable:
            // A literal path is a `Node.variable`; here the path is computed.
            if let pathOperand = operands.first {
                references.append(
                    JsonLogicDataReference(
                        path: .computed(knownPrefix: pathOperand.knownPrefix), location: operandPaths[0],
                        hasDefault: operands.count > 1))
            }
            for operand in operands { operand.collectDataReferences(into: &references) }
        case .missing:
            // As the evaluator: a first operand that is an array is the whole list of keys.
            if case .literal(.array(let keys)) = operands.first {
                for (index, key) in keys.enumerated() {
                    references.append(Self.missingKey(key, at: operandPaths[0].appending(index)))
                }
            } else {
                for (operand, location) in zip(operands, operandPaths) {
                    references.append(Self.missingKey(operand, at: location))
                    operand.collectDataReferences(into: &references)
                }
            }
        case .missingSome:
            operands[0].collectDataReferences(into: &references)
            if case .literal(.array(let keys)) = operands[1] {
                for (index, key) in keys.enumerated() {
                    references.append(Self.missingKey(key, at: operandPaths[1].appending(index)))
                }
            } else {
                references.append(
                    JsonLogicDataReference(
                        path: .computed(knownPrefix: ""), location: operandPaths[1], hasDefault: false))
                operands[1].collectDataReferences(into: &references)
            }
        default:
            for (index, operand) in operands.enumerated() where !(op.scopesSecondOperand && index == 1) {
                operand.collectDataReferences(into: &references)
            }
        }
    }

    /// A key `missing` looks up: a path, or `[path, default]` as `var` takes it.
    private static func missingKey(_ key: JSONValue, at location: JSONPath) -> JsonLogicDataReference {
        func components(_ path: JSONValue?) -> [String] {
            (VariablePath.components(of: path.map(Node.literal)) ?? []).map(String.init)
        }
        if case .array(let pathAndDefault) = key {
            return JsonLogicDataReference(
                path: .literal(components(pathAndDefault.first)), location: location.appending(0),
                hasDefault: pathAndDefault.count > 1)
        }
        return JsonLogicDataReference(path: .literal(components(key)), location: location, hasDefault: false)
    }

    private static func missingKey(_ key: Node, at location: JSONPath) -> JsonLogicDataReference {
        if case .literal(let value) = key { return missingKey(value, at: location) }
        return JsonLogicDataReference(
            path: .computed(knownPrefix: key.knownPrefix), location: location, hasDefault: false)
    }
}

struct VariablePath: Sendable {
    /// Empty for the whole data.
    let components: [Substring]
    let fallback: Node?
    /// The operation, for evaluation errors.
    let path: JSONPath
    /// The path operand in the document.
    let location: JSONPath
}

struct Operation: Sendable {
    let op: Operator
    let operands: [Node]
    let path: JSONPath
    /// Where each operand is written in the document.
    let operandPaths: [JSONPath]
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
                VariablePath(
                    components: components, fallback: operands.element(at: 1), path: operatorPath,
                    location: operandValues.first?.1 ?? operatorPath))
        }
        return .operation(
            Operation(op: op, operands: operands, path: operatorPath, operandPaths: operandValues.map(\.1)))
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
