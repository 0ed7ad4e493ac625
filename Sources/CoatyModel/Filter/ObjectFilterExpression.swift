import CoatyJSON

/// The filter operators of Coaty; on the wire each is its integer code.
public enum ObjectFilterOperator: Int, Sendable, Hashable, CaseIterable {
    case lessThan = 0
    case lessThanOrEqual = 1
    case greaterThan = 2
    case greaterThanOrEqual = 3
    case between = 4
    case notBetween = 5
    case like = 6
    case equals = 7
    case notEquals = 8
    case exists = 9
    case notExists = 10
    case contains = 11
    case notContains = 12
    case `in` = 13
    case notIn = 14
}

/// An operator with its operands, `[operator, operand1?, operand2?]` on the wire.
///
/// The operands are kept as they came: Coaty JS checks only the operator, so a received expression may carry too
/// few or too many operands, and the matcher then behaves as JS does with the missing ones `undefined`.
/// Build expressions with the static functions (`.between(6, 8)` is `[4,6,8]`).
public struct ObjectFilterExpression: Sendable {
    public let `operator`: ObjectFilterOperator
    public let operands: [JSONValue]
    /// The Like pattern, compiled once (JS caches its regular expression on the expression, too).
    let likePattern: LikePattern?

    public init(_ operator: ObjectFilterOperator, operands: [JSONValue]) {
        self.operator = `operator`
        self.operands = operands
        if `operator` == .like, case .string(let pattern)? = operands.first {
            likePattern = LikePattern(pattern)
        } else {
            likePattern = nil
        }
    }

    /// Less than; numbers compare numerically and two strings with the root collation, as in JS.
    public static func lessThan(_ value: JSONValue) -> Self { Self(.lessThan, operands: [value]) }
    public static func lessThanOrEqual(_ value: JSONValue) -> Self { Self(.lessThanOrEqual, operands: [value]) }
    public static func greaterThan(_ value: JSONValue) -> Self { Self(.greaterThan, operands: [value]) }
    public static func greaterThanOrEqual(_ value: JSONValue) -> Self { Self(.greaterThanOrEqual, operands: [value]) }
    /// Inclusive range; the bounds are swapped when the first is greater.
    public static func between(_ value1: JSONValue, _ value2: JSONValue) -> Self {
        Self(.between, operands: [value1, value2])
    }
    public static func notBetween(_ value1: JSONValue, _ value2: JSONValue) -> Self {
        Self(.notBetween, operands: [value1, value2])
    }
    /// SQL LIKE over the whole string: `_` is one character, `%` any run, `\` escapes the next character.
    public static func like(_ pattern: String) -> Self { Self(.like, operands: [.string(pattern)]) }
    public static func equals(_ value: JSONValue) -> Self { Self(.equals, operands: [value]) }
    public static func notEquals(_ value: JSONValue) -> Self { Self(.notEquals, operands: [value]) }
    public static var exists: Self { Self(.exists, operands: []) }
    public static var notExists: Self { Self(.notExists, operands: []) }
    /// Deep containment, like PostgreSQL's JSONB `@>`; a top-level array may also contain a primitive value.
    public static func contains(_ value: JSONValue) -> Self { Self(.contains, operands: [value]) }
    public static func notContains(_ value: JSONValue) -> Self { Self(.notContains, operands: [value]) }
    /// The property value is deep-equal to one of the values.
    public static func `in`(_ values: [JSONValue]) -> Self { Self(.in, operands: [.array(values)]) }
    public static func notIn(_ values: [JSONValue]) -> Self { Self(.notIn, operands: [.array(values)]) }

    /// Reads `[operator, operands...]` with the checks of Coaty JS: an array whose first element is a known
    /// operator code.
    public init(json: JSONValue, at path: JSONPath = .root) throws(JSONShapeError) {
        let cursor = JSONCursor(json, path: path)
        guard case .array(let elements) = json else {
            throw cursor.error("expected a filter expression [operator, operands...], found \(json.typeName)")
        }
        guard let first = elements.first else {
            throw cursor.error("a filter expression needs an operator")
        }
        let code = JSONCursor(first, path: path.appending(0))
        guard case .number = first else {
            throw code.error("expected an operator code, found \(first.typeName)")
        }
        guard let raw = first.intValue, let op = ObjectFilterOperator(rawValue: raw) else {
            throw code.error("\(first) is not a filter operator code (0...14)")
        }
        self.init(op, operands: Array(elements.dropFirst()))
    }

    public var json: JSONValue {
        var elements: [JSONValue] = [.number(Double(self.operator.rawValue))]
        elements.append(contentsOf: operands)
        return .array(elements)
    }

    /// The first or second operand; `nil` stands for JavaScript's `undefined`. (Careful: a bare `nil` where a
    /// `JSONValue` is expected is JSON `null`, which JavaScript compares as 0.)
    var operand1: JSONValue? { operands.first }
    var operand2: JSONValue? { operands.dropFirst().first }
}

extension ObjectFilterExpression: Hashable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.operator == rhs.operator && lhs.operands == rhs.operands
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(self.operator)
        hasher.combine(operands)
    }
}

extension ObjectFilterExpression: CustomStringConvertible {
    public var description: String { json.serialized() }
}
