import CoatyJSON

/// Evaluates a checked expression tree the way json-logic-js applies a rule: operands first, except for the
/// operators that decide themselves which operands to evaluate (`if`, `and`, `or` and the array operators).
struct Evaluator {
    private var budget: Int
    private let limit: Int

    init(budget: Int, limit: Int) {
        self.budget = budget
        self.limit = limit
    }

    mutating func evaluate(_ node: Node, data: JSONValue) throws(JsonLogicEvaluationError) -> JSONValue {
        switch node {
        case .literal(let value):
            return value
        case .array(let elements, let path):
            try charge(1, at: path)
            var values: [JSONValue] = []
            values.reserveCapacity(elements.count)
            for element in elements {
                values.append(try evaluate(element, data: data))
            }
            return .array(values)
        case .operation(let operation):
            try charge(1, at: operation.path)
            return try apply(operation, data: data)
        case .variable(let variable):
            try charge(1, at: variable.path)
            if let value = Self.lookup(variable.components, in: data) { return value }
            return try variable.fallback.map { node throws(JsonLogicEvaluationError) in try evaluate(node, data: data) }
                ?? .null
        }
    }

    private mutating func charge(_ units: Int, at path: JSONPath) throws(JsonLogicEvaluationError) {
        budget -= units
        if budget < 0 {
            throw JsonLogicEvaluationError(path: path, reason: "evaluation exceeded its budget of \(limit) steps")
        }
    }

    private mutating func apply(_ operation: Operation, data: JSONValue) throws(JsonLogicEvaluationError) -> JSONValue {
        let operands = operation.operands
        switch operation.op {
        case .if, .ternary:
            var index = 0
            while index + 1 < operands.count {
                if try evaluate(operands[index], data: data).isJsonLogicTruthy {
                    return try evaluate(operands[index + 1], data: data)
                }
                index += 2
            }
            return index < operands.count ? try evaluate(operands[index], data: data) : .null
        case .and, .or:
            let stopWhenTruthy = operation.op == .or
            var current = JSONValue.null
            for operand in operands {
                current = try evaluate(operand, data: data)
                if current.isJsonLogicTruthy == stopWhenTruthy { return current }
            }
            return current
        case .map, .filter, .reduce, .all, .none, .some:
            return try applyToArray(operation, data: data)
        default:
            var values: [JSONValue] = []
            values.reserveCapacity(operands.count)
            for operand in operands {
                values.append(try evaluate(operand, data: data))
            }
            return try apply(operation.op, to: values, data: data, at: operation.path)
        }
    }

    /// The operators whose operands are all evaluated first.
    private mutating func apply(
        _ op: Operator, to values: [JSONValue], data: JSONValue, at path: JSONPath
    ) throws(JsonLogicEvaluationError) -> JSONValue {
        switch op {
        case .variable:
            return Self.variable(values.first, default: values.element(at: 1), in: data)
        case .missing:
            return .array(Self.missing(values, in: data))
        case .missingSome:
            guard case .array(let keys) = values[1] else {
                throw JsonLogicEvaluationError(
                    path: path.appending(1),
                    reason: "\"missing_some\" needs an array of keys, found \(values[1].typeName)")
            }
            let missing = Self.missing(keys, in: data)
            let present = JSONValue.number(Double(keys.count - missing.count))
            return JavaScript.greaterOrEqual(present, values[0]) ? [] : .array(missing)
        case .looseEqual: return .bool(JavaScript.looseEquals(values[0], values[1]))
        case .strictEqual: return .bool(JavaScript.strictEquals(values[0], values[1]))
        case .looseNotEqual: return .bool(!JavaScript.looseEquals(values[0], values[1]))
        case .strictNotEqual: return .bool(!JavaScript.strictEquals(values[0], values[1]))
        case .not: return .bool(!values[0].isJsonLogicTruthy)
        case .doubleNot: return .bool(values[0].isJsonLogicTruthy)
        case .less:
            return .bool(
                JavaScript.less(values[0], values[1]) && (values.count < 3 || JavaScript.less(values[1], values[2])))
        case .lessOrEqual:
            return .bool(
                JavaScript.lessOrEqual(values[0], values[1])
                    && (values.count < 3 || JavaScript.lessOrEqual(values[1], values[2])))
        case .greater: return .bool(JavaScript.greater(values[0], values[1]))
        case .greaterOrEqual: return .bool(JavaScript.greaterOrEqual(values[0], values[1]))
        case .max: return .number(Self.extreme(values.map(JavaScript.toNumber), largest: true))
        case .min: return .number(Self.extreme(values.map(JavaScript.toNumber), largest: false))
        case .add:
            return .number(values.reduce(0) { $0 + JavaScript.parseFloat($1) })
        case .multiply:
            // Array.prototype.reduce without a start value hands a single operand back unconverted.
            guard values.count > 1 else { return values[0] }
            var product = JavaScript.parseFloat(values[0]) * JavaScript.parseFloat(values[1])
            for value in values.dropFirst(2) {
                product = JavaScript.parseFloat(.number(product)) * JavaScript.parseFloat(value)
            }
            return .number(product)
        case .subtract:
            if values.count == 1 { return .number(-JavaScript.toNumber(values[0])) }
            return .number(JavaScript.toNumber(values[0]) - JavaScript.toNumber(values[1]))
        case .divide:
            return .number(JavaScript.toNumber(values[0]) / JavaScript.toNumber(values[1]))
        case .remainder:
            return .number(
                JavaScript.toNumber(values[0]).truncatingRemainder(dividingBy: JavaScript.toNumber(values[1])))
        case .in:
            return .bool(Self.contains(values[1], values[0]))
        case .cat:
            let text = JavaScript.join(values, separator: "")
            try charge(text.utf8.count, at: path)
            return .string(text)
        case .substr:
            let text = Self.substring(values[0], start: values[1], length: values.element(at: 2))
            try charge(text.utf8.count, at: path)
            return .string(text)
        case .merge:
            var merged: [JSONValue] = []
            for value in values {
                if case .array(let elements) = value {
                    merged.append(contentsOf: elements)
                } else {
                    merged.append(value)
                }
            }
            try charge(merged.count, at: path)
            return .array(merged)
        case .log:
            return values[0]
        case .if, .ternary, .and, .or, .map, .filter, .reduce, .all, .none, .some:
            preconditionFailure("\(op.rawValue) is applied before its operands are evaluated")
        }
    }

    /// map, filter, reduce, all, none and some: the second operand runs once per element of the first.
    private mutating func applyToArray(_ operation: Operation, data: JSONValue) throws(JsonLogicEvaluationError)
        -> JSONValue
    {
        let operands = operation.operands
        let collection = try evaluate(operands[0], data: data)
        let logic = operands[1]
        guard case .array(let elements) = collection else {
            switch operation.op {
            case .map, .filter: return []
            case .reduce: return operands.count > 2 ? try evaluate(operands[2], data: data) : .null
            case .none: return true
            default: return false
            }
        }
        switch operation.op {
        case .map:
            try charge(elements.count, at: operation.path)
            var mapped: [JSONValue] = []
            mapped.reserveCapacity(elements.count)
            for element in elements {
                mapped.append(try evaluate(logic, data: element))
            }
            return .array(mapped)
        case .filter:
            try charge(elements.count, at: operation.path)
            var kept: [JSONValue] = []
            for element in elements where try evaluate(logic, data: element).isJsonLogicTruthy {
                kept.append(element)
            }
            return .array(kept)
        case .reduce:
            var accumulator = operands.count > 2 ? try evaluate(operands[2], data: data) : .null
            for element in elements {
                accumulator = try evaluate(logic, data: ["current": element, "accumulator": accumulator])
            }
            return accumulator
        case .all:
            if elements.isEmpty { return false }
            for element in elements where !(try evaluate(logic, data: element).isJsonLogicTruthy) {
                return false
            }
            return true
        case .none, .some:
            let someMatch = operation.op == .some
            for element in elements where try evaluate(logic, data: element).isJsonLogicTruthy {
                return .bool(someMatch)
            }
            return .bool(!someMatch)
        default:
            preconditionFailure("\(operation.op.rawValue) does not iterate an array")
        }
    }

    // MARK: Data access

    /// `var` with a computed path: a dot path into `data`; an absent, `null` or empty path is the data itself.
    /// The default (or `null`) stands for a path that leads nowhere.
    static func variable(_ path: JSONValue?, default fallback: JSONValue?, in data: JSONValue) -> JSONValue {
        guard let path, !path.isNull, path != "" else { return data }
        let components = JavaScript.toString(path).split(separator: ".", omittingEmptySubsequences: false)
        return lookup(components, in: data) ?? fallback ?? .null
    }

    /// Follows a path; nil when it leads nowhere. A member whose value is `null` is found, not missing.
    static func lookup(_ components: [Substring], in data: JSONValue) -> JSONValue? {
        var current = data
        for component in components {
            guard !current.isNull, let next = member(of: current, named: component) else { return nil }
            current = next
        }
        return current
    }

    /// Property access as JavaScript does it on JSON data: object members, array and string indexes, and the
    /// `length` of arrays and strings (in UTF-16 code units).
    private static func member(of value: JSONValue, named name: Substring) -> JSONValue? {
        switch value {
        case .object(let object):
            return object.members.first { $0.key.utf8.elementsEqual(name.utf8) }?.value
        case .array(let elements):
            if name == "length" { return .number(Double(elements.count)) }
            guard let index = arrayIndex(name), index < elements.count else { return nil }
            return elements[index]
        case .string(let string):
            let units = string.utf16
            if name == "length" { return .number(Double(units.count)) }
            guard let index = arrayIndex(name), index < units.count else { return nil }
            let position = units.index(units.startIndex, offsetBy: index)
            return .string(String(decoding: [units[position]], as: UTF16.self))
        case .null, .bool, .number:
            return nil
        }
    }

    /// A canonical array index: "0", "17", but not "01", "-1" or "1.0".
    private static func arrayIndex(_ name: Substring) -> Int? {
        guard let first = name.utf8.first, name.utf8.count <= 10,
            name.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            first != UInt8(ascii: "0") || name.utf8.count == 1
        else { return nil }
        return Int(name)
    }

    /// `missing`: the keys whose values are `null`, missing or "". The first operand, if it is an array, is the
    /// whole list of keys (so `missing` can take the result of `merge`).
    static func missing(_ values: [JSONValue], in data: JSONValue) -> [JSONValue] {
        let keys: [JSONValue]
        if case .array(let list) = values.first {
            keys = list
        } else {
            keys = values
        }
        return keys.filter { key in
            let value: JSONValue
            if case .array(let arguments) = key {
                value = variable(arguments.first, default: arguments.element(at: 1), in: data)
            } else {
                value = variable(key, default: nil, in: data)
            }
            return value.isNull || value == ""
        }
    }

    // MARK: Arithmetic and strings

    /// `Math.max` / `Math.min`: NaN if any operand is NaN; +0 is larger than -0.
    private static func extreme(_ numbers: [Double], largest: Bool) -> Double {
        var result = largest ? -Double.infinity : Double.infinity
        for number in numbers {
            if number.isNaN { return .nan }
            if largest ? number > result : number < result {
                result = number
            } else if number == 0, result == 0, (number.sign == .plus) == largest {
                result = number
            }
        }
        return result
    }

    /// `in`: substring of a string, or strict membership in an array; false for anything else.
    private static func contains(_ haystack: JSONValue, _ needle: JSONValue) -> Bool {
        switch haystack {
        case .string(let string) where !string.isEmpty:
            let pattern = Array(JavaScript.toString(needle).utf8)
            let text = Array(string.utf8)
            if pattern.isEmpty { return true }
            guard pattern.count <= text.count else { return false }
            for start in 0...(text.count - pattern.count)
            where text[start..<start + pattern.count].elementsEqual(pattern) {
                return true
            }
            return false
        case .array(let elements):
            return elements.contains { JavaScript.strictEquals($0, needle) }
        default:
            return false
        }
    }

    /// json-logic-js `substr`: `String.prototype.substr(start, length)` on UTF-16 code units, where a negative
    /// length drops that many units from the end.
    static func substring(_ source: JSONValue, start: JSONValue, length: JSONValue?) -> String {
        let units = Array(JavaScript.toString(source).utf16)
        if let length, JavaScript.less(length, .number(0)) {
            let tail = Array(substr(units[...], start: start, length: nil))
            // `temp.length + end`: a string `end` concatenates rather than adds.
            let keep: JSONValue
            if case .string(let text) = JavaScript.toPrimitive(length) {
                keep = .string(String(tail.count) + text)
            } else {
                keep = .number(Double(tail.count) + JavaScript.toNumber(length))
            }
            return String(decoding: substr(tail[...], start: 0, length: keep), as: UTF16.self)
        }
        return String(decoding: substr(units[...], start: start, length: length), as: UTF16.self)
    }

    /// `String.prototype.substr`.
    private static func substr(_ units: ArraySlice<UInt16>, start: JSONValue, length: JSONValue?) -> ArraySlice<UInt16>
    {
        let size = Double(units.count)
        var first = JavaScript.toInteger(start)
        if first < 0 { first = Swift.max(size + first, 0) }
        first = Swift.min(first, size)
        let count = length.map { Swift.min(Swift.max(JavaScript.toInteger($0), 0), size - first) } ?? size - first
        let lower = units.startIndex + Int(first)
        return units[lower..<lower + Int(count)]
    }
}

extension Array {
    /// The element, or nil past the end. (A ternary with a `nil` branch would turn into `JSONValue.null` here,
    /// since `JSONValue` is expressible by `nil`.)
    func element(at index: Int) -> Element? {
        indices.contains(index) ? self[index] : nil
    }
}
