import CoatyJSON

/// Matches objects against Coaty filters with the semantics of Coaty JS's `ObjectMatcher`, and selects, orders
/// and pages lists of objects by an `ObjectFilter` as Coaty JS's in-memory database does.
///
/// Where Coaty JS throws while matching (`Contains` of `null` in an object, `In` with an operand that is not an
/// array), the filter does not match.
public enum ObjectMatcher {
    /// Whether the object satisfies the filter; no filter, or one without conditions, matches every object.
    public static func matches(_ object: JSONValue, filter: ContextFilter?) -> Bool {
        matches(object, conditions: filter?.conditions)
    }

    public static func matches(_ object: CoatyObject, filter: ContextFilter?) -> Bool {
        matches(object.jsonValue, conditions: filter?.conditions)
    }

    /// Whether a Call reaches an observer: a Call with a filter only an observer whose context object matches it,
    /// a Call without one only observers that gave no context (Coaty 2), and an observer without a context every
    /// Call.
    public static func matchesCall(filter: ContextFilter?, context: CoatyObject?) -> Bool {
        guard let context else { return true }
        guard let filter else { return false }
        return matches(context, filter: filter)
    }

    /// The objects that match the filter's conditions, ordered by its `orderByProperties` (stable: objects that
    /// compare equal keep their order), then `skip` dropped and at most `take` kept.
    public static func select<Objects: Collection>(
        _ objects: Objects, filter: ObjectFilter?, json: (Objects.Element) -> JSONValue
    ) -> [Objects.Element] {
        guard let filter else { return Array(objects) }
        var selected: [Objects.Element] = []
        var keys: [[JSONValue?]] = []
        let orderings = filter.orderByProperties ?? []
        for object in objects {
            let value = json(object)
            guard matches(value, conditions: filter.conditions) else { continue }
            selected.append(object)
            if !orderings.isEmpty {
                keys.append(orderings.map { $0.property.value(in: value) })
            }
        }
        if !orderings.isEmpty {
            let order = keys.indices.sorted { a, b in
                for (position, ordering) in orderings.enumerated() {
                    let result = compareForOrdering(keys[a][position], keys[b][position])
                    if result != 0 { return ordering.order == .ascending ? result < 0 : result > 0 }
                }
                return a < b
            }
            selected = order.map { selected[$0] }
        }
        let start = min(filter.skip ?? 0, selected.count)
        let end = filter.take.map { min(start + $0, selected.count) } ?? selected.count
        return Array(selected[start..<end])
    }

    public static func select(_ objects: [CoatyObject], filter: ObjectFilter?) -> [CoatyObject] {
        select(objects, filter: filter, json: \.jsonValue)
    }

    // MARK: Conditions

    private static func matches(_ object: JSONValue, conditions: ObjectFilterConditions?) -> Bool {
        switch conditions {
        case nil:
            return true
        case .condition(let condition)?:
            return evaluate(condition, on: object) ?? false
        case .and(let conditions)?:
            for condition in conditions {
                guard let result = evaluate(condition, on: object), result else { return false }
            }
            return true
        case .or(let conditions)?:
            for condition in conditions {
                guard let result = evaluate(condition, on: object) else { return false }
                if result { return true }
            }
            return false
        }
    }

    /// The outcome of one condition, or `nil` where Coaty JS throws (which ends the whole match in JS, so AND and
    /// OR stop there, too).
    static func evaluate(_ condition: ObjectFilterCondition, on object: JSONValue) -> Bool? {
        typealias JS = JavaScriptSemantics
        let expression = condition.expression
        let found = condition.property.value(in: object)
        if expression.operator == .notExists { return found == nil }
        guard let value = found else { return false }
        let operand1 = expression.operand1
        let operand2 = expression.operand2

        switch expression.operator {
        case .lessThan:
            if let order = collationOrder(value, operand1) { return order < 0 }
            return JS.lessThan(value, operand1) == true
        case .lessThanOrEqual:
            if let order = collationOrder(value, operand1) { return order <= 0 }
            return JS.lessThanOrEqual(value, operand1)
        case .greaterThan:
            if let order = collationOrder(value, operand1) { return order > 0 }
            return JS.lessThan(operand1, value) == true
        case .greaterThanOrEqual:
            if let order = collationOrder(value, operand1) { return order >= 0 }
            return JS.greaterThanOrEqual(value, operand1)
        case .between, .notBetween:
            let isBetween = expression.operator == .between
            if case .string(let text) = value, case .string(var low)? = operand1, case .string(var high)? = operand2 {
                if RootCollation.compare(low, high) > 0 { swap(&low, &high) }
                let isOutside = RootCollation.compare(text, low) < 0 || RootCollation.compare(text, high) > 0
                return isBetween != isOutside
            }
            // Not the negation of each other: with an undefined comparison (NaN) both are false.
            let (low, high) = JS.lessThan(operand2, operand1) == true ? (operand2, operand1) : (operand1, operand2)
            if isBetween {
                return JS.greaterThanOrEqual(value, low) && JS.lessThanOrEqual(value, high)
            }
            return JS.lessThan(value, low) == true || JS.lessThan(high, value) == true
        case .like:
            guard case .string(let text) = value, let pattern = expression.likePattern else { return false }
            return pattern.matches(text)
        case .equals:
            return JS.deepEquals(value, operand1)
        case .notEquals:
            return !JS.deepEquals(value, operand1)
        case .exists:
            return true
        case .notExists:
            return false  // handled above
        case .contains:
            return JS.contains(value, operand1)
        case .notContains:
            return JS.contains(value, operand1).map(!)
        case .in:
            return JS.includes(operand1, value)
        case .notIn:
            return JS.includes(operand1, value).map(!)
        }
    }

    /// The collation order when both sides are strings, which is when Coaty JS uses `Intl.Collator`.
    private static func collationOrder(_ value: JSONValue, _ operand: JSONValue?) -> Int? {
        guard case .string(let a) = value, case .string(let b)? = operand else { return nil }
        return RootCollation.compare(a, b)
    }

    // MARK: Ordering

    /// The comparison of Coaty JS's in-memory database for `orderByProperties`: undefined first, strings by
    /// collation, numbers by value, `false` before `true`.
    ///
    /// For other pairs (mixed types, null, arrays, objects) the JS comparator falls back to `x < y ? -1 : 1`,
    /// which is not a consistent order (it says 1 both ways when neither is less), so its result depends on the
    /// engine's sort algorithm. Here such values are ranked by type instead, null < booleans < numbers < strings
    /// < arrays < objects, and two arrays or two objects compare equal, which keeps the sort well defined.
    static func compareForOrdering(_ x: JSONValue?, _ y: JSONValue?) -> Int {
        switch (x, y) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case (.string(let a)?, .string(let b)?): return RootCollation.compare(a, b)
        case (.number(let a)?, .number(let b)?): return a < b ? -1 : (a > b ? 1 : 0)
        case (.bool(let a)?, .bool(let b)?): return a == b ? 0 : (a ? 1 : -1)
        case (let a?, let b?): return typeRank(a) - typeRank(b)
        }
    }

    private static func typeRank(_ value: JSONValue) -> Int {
        switch value {
        case .null: 0
        case .bool: 1
        case .number: 2
        case .string: 3
        case .array: 4
        case .object: 5
        }
    }
}

extension ObjectFilterProperty {
    /// The value this property names in the object, or `nil` where JavaScript property access gives
    /// `undefined`: names are looked up in objects, and in arrays as canonical indices (`"0"`, not `"00"`) or
    /// `length`. Primitive values have no properties.
    ///
    /// Unlike JavaScript, members inherited from `Object.prototype` (`toString`, `constructor`, ...) and array
    /// methods are not found: JS would return functions, which no filter can usefully test.
    public func value(in object: JSONValue) -> JSONValue? {
        var current = object
        for name in names {
            switch current {
            case .object(let members):
                guard let member = JavaScriptSemantics.ownMember(name, of: members) else { return nil }
                current = member
            case .array(let elements):
                if name == "length" {
                    current = .number(Double(elements.count))
                } else {
                    guard let index = Self.arrayIndex(name), index < elements.count else { return nil }
                    current = elements[index]
                }
            default:
                return nil
            }
        }
        return current
    }

    /// The index a property name denotes on an array: decimal digits without a leading zero, below 2³² − 1.
    private static func arrayIndex(_ name: String) -> Int? {
        let digits = name.utf8
        guard let first = digits.first, digits.count <= 10, first != UInt8(ascii: "0") || digits.count == 1 else {
            return nil
        }
        var value = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return value < 0xFFFF_FFFF ? value : nil
    }
}
