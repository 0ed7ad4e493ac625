/// The operators of JsonLogic (jsonlogic.com) that rules may use.
enum Operator: String, CaseIterable, Sendable {
    case variable = "var"
    case missing
    case missingSome = "missing_some"
    case `if`
    case ternary = "?:"
    case looseEqual = "=="
    case strictEqual = "==="
    case looseNotEqual = "!="
    case strictNotEqual = "!=="
    case not = "!"
    case doubleNot = "!!"
    case or
    case and
    case less = "<"
    case lessOrEqual = "<="
    case greater = ">"
    case greaterOrEqual = ">="
    case max
    case min
    case add = "+"
    case subtract = "-"
    case multiply = "*"
    case divide = "/"
    case remainder = "%"
    case `in`
    case cat
    case substr
    case merge
    case map
    case filter
    case reduce
    case all
    case none
    case some
    case log

    /// How many operands the operator takes. json-logic-js ignores extra operands and reads missing ones as
    /// `undefined`; a rule file with the wrong count is almost always a mistake, so it is rejected up front.
    /// Variadic operators that have no meaningful result without operands (`and` and `or` give `undefined`,
    /// `*` throws, `min` and `max` give an infinity) need at least one.
    var arity: ClosedRange<Int> {
        switch self {
        case .variable: 0...2
        case .missing, .if, .ternary, .add, .cat, .merge: 0...Int.max
        case .or, .and, .max, .min, .multiply: 1...Int.max
        case .not, .doubleNot, .log: 1...1
        case .subtract: 1...2
        case .less, .lessOrEqual, .substr, .reduce: 2...3
        case .looseEqual, .strictEqual, .looseNotEqual, .strictNotEqual, .greater, .greaterOrEqual, .divide,
            .remainder, .in, .missingSome, .map, .filter, .all, .none, .some:
            2...2
        }
    }

    /// Operators whose second operand is evaluated once per array element, with the element as data.
    var scopesSecondOperand: Bool {
        switch self {
        case .map, .filter, .reduce, .all, .none, .some: true
        default: false
        }
    }

    func arityDescription() -> String {
        let range = arity
        let noun = { (count: Int) in count == 1 ? "operand" : "operands" }
        if range.upperBound == Int.max {
            return "at least \(range.lowerBound) \(noun(range.lowerBound))"
        }
        if range.lowerBound == range.upperBound {
            return "\(range.lowerBound) \(noun(range.lowerBound))"
        }
        if range.count == 2 {
            return "\(range.lowerBound) or \(range.upperBound) operands"
        }
        return "\(range.lowerBound) to \(range.upperBound) operands"
    }
}
