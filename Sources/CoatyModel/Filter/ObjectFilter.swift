import CoatyJSON

/// A property and the expression its value must satisfy: `[property, [operator, operands...]]` on the wire.
public struct ObjectFilterCondition: Sendable, Hashable {
    public var property: ObjectFilterProperty
    public var expression: ObjectFilterExpression

    public init(_ property: ObjectFilterProperty, _ expression: ObjectFilterExpression) {
        self.property = property
        self.expression = expression
    }

    /// Reads a condition as Coaty JS's `isFilterConditionValid` checks it: exactly two elements, a non-empty dot
    /// path or an array of names, and an expression with a known operator code.
    public init(json: JSONValue, at path: JSONPath = .root) throws(JSONShapeError) {
        guard case .array(let elements) = json else {
            throw JSONShapeError(
                path: path,
                reason: "expected a filter condition [property, [operator, operands...]], found \(json.typeName)")
        }
        guard elements.count == 2 else {
            throw JSONShapeError(
                path: path, reason: "a filter condition has 2 elements, [property, expression], found \(elements.count)"
            )
        }
        property = try ObjectFilterProperty(json: elements[0], at: path.appending(0), allowsEmptyDotPath: false)
        expression = try ObjectFilterExpression(json: elements[1], at: path.appending(1))
    }

    public var json: JSONValue { .array([property.json, expression.json]) }
}

/// The conditions of a filter: one condition, or several combined by AND or by OR.
///
/// As in Coaty JS, an empty AND list matches every object and an empty OR list matches none.
public enum ObjectFilterConditions: Sendable, Hashable {
    case condition(ObjectFilterCondition)
    case and([ObjectFilterCondition])
    case or([ObjectFilterCondition])

    /// Reads a condition (an array) or `{"and": [...]}` / `{"or": [...]}`; `and` and `or` exclude each other.
    /// `{}` is valid in Coaty JS and matches everything, the same as no conditions: it reads as `nil`.
    static func read(_ json: JSONValue, at path: JSONPath) throws(JSONShapeError) -> ObjectFilterConditions? {
        switch json {
        case .array:
            return .condition(try ObjectFilterCondition(json: json, at: path))
        case .object(let object):
            let and = object["and"]
            let or = object["or"]
            if and != nil && or != nil {
                throw JSONShapeError(path: path, reason: "\"and\" and \"or\" exclude each other")
            }
            if let and {
                return .and(try readList(and, at: path.appending("and")))
            }
            if let or {
                return .or(try readList(or, at: path.appending("or")))
            }
            return nil
        default:
            throw JSONShapeError(
                path: path,
                reason: "expected a filter condition or {\"and\"|\"or\": [conditions]}, found \(json.typeName)")
        }
    }

    private static func readList(_ json: JSONValue, at path: JSONPath) throws(JSONShapeError) -> [ObjectFilterCondition]
    {
        guard case .array(let elements) = json else {
            throw JSONShapeError(path: path, reason: "expected an array of filter conditions, found \(json.typeName)")
        }
        var conditions: [ObjectFilterCondition] = []
        conditions.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            conditions.append(try ObjectFilterCondition(json: element, at: path.appending(index)))
        }
        return conditions
    }

    public var json: JSONValue {
        switch self {
        case .condition(let condition): condition.json
        case .and(let conditions): ["and": .array(conditions.map(\.json))]
        case .or(let conditions): ["or": .array(conditions.map(\.json))]
        }
    }
}

/// `{"conditions"?: ...}`: the filter a Call carries for the callee's context object.
///
/// Members other than `conditions` are accepted and ignored, as Coaty JS ignores them.
public struct ContextFilter: Sendable, Hashable {
    /// `nil` matches every object.
    public var conditions: ObjectFilterConditions?

    public init(_ conditions: ObjectFilterConditions? = nil) {
        self.conditions = conditions
    }

    /// A filter of a single condition, `{"conditions": [property, expression]}`.
    public init(_ property: ObjectFilterProperty, _ expression: ObjectFilterExpression) {
        conditions = .condition(ObjectFilterCondition(property, expression))
    }

    /// Reads a filter as Coaty JS's `isContextFilterValid` checks it; `null` is not a filter.
    public init(json: JSONValue, at path: JSONPath = .root) throws(JSONShapeError) {
        guard case .object(let object) = json else {
            throw JSONShapeError(path: path, reason: "expected a filter object, found \(json.typeName)")
        }
        conditions = try object["conditions"].flatMap { conditions throws(JSONShapeError) in
            try ObjectFilterConditions.read(conditions, at: path.appending("conditions"))
        }
    }

    public var json: JSONObject {
        var json = JSONObject()
        json.set("conditions", ifPresent: conditions?.json)
        return json
    }
}

/// Which way an ordering sorts: `"Asc"` or `"Desc"` on the wire.
public enum SortOrder: String, Sendable, Hashable {
    case ascending = "Asc"
    case descending = "Desc"
}

/// One key of an ordering, `[property, "Asc"|"Desc"]` on the wire.
public struct ObjectFilterOrdering: Sendable, Hashable {
    public var property: ObjectFilterProperty
    public var order: SortOrder

    public init(_ property: ObjectFilterProperty, _ order: SortOrder) {
        self.property = property
        self.order = order
    }

    public init(json: JSONValue, at path: JSONPath = .root) throws(JSONShapeError) {
        guard case .array(let elements) = json, elements.count == 2 else {
            throw JSONShapeError(path: path, reason: "expected an ordering [property, \"Asc\"|\"Desc\"], found \(json)")
        }
        // Coaty JS allows the empty dot path here, unlike in conditions.
        property = try ObjectFilterProperty(json: elements[0], at: path.appending(0), allowsEmptyDotPath: true)
        guard case .string(let name) = elements[1], let order = SortOrder(rawValue: name) else {
            throw JSONShapeError(path: path.appending(1), reason: "expected \"Asc\" or \"Desc\", found \(elements[1])")
        }
        self.order = order
    }

    public var json: JSONValue { .array([property.json, .string(order.rawValue)]) }
}

/// A context filter plus ordering and paging: what a Query carries to select, sort and page objects.
///
/// Coaty JS only checks that `take` and `skip` are numbers. They are read as counts here: a fraction rounds up
/// and a negative count is 0. `take: 0` returns no objects (JS's in-memory database would read 0 as "no limit",
/// its PostgreSQL adapter as `LIMIT 0`; the documented meaning is "no more than that many").
public struct ObjectFilter: Sendable, Hashable {
    public var conditions: ObjectFilterConditions?
    public var orderByProperties: [ObjectFilterOrdering]?
    public var take: Int?
    public var skip: Int?

    public init(
        _ conditions: ObjectFilterConditions? = nil, orderByProperties: [ObjectFilterOrdering]? = nil,
        take: Int? = nil, skip: Int? = nil
    ) {
        self.conditions = conditions
        self.orderByProperties = orderByProperties
        self.take = take
        self.skip = skip
    }

    /// Reads a filter as Coaty JS's `isObjectFilterValid` checks it.
    public init(json: JSONValue, at path: JSONPath = .root) throws(JSONShapeError) {
        let context = try ContextFilter(json: json, at: path)
        let root = JSONCursor(json, path: path)
        conditions = context.conditions
        orderByProperties = try root.optional("orderByProperties").map { orderings throws(JSONShapeError) in
            try orderings.elements().map { ordering throws(JSONShapeError) in
                try ObjectFilterOrdering(json: ordering.value, at: ordering.path)
            }
        }
        take = try root.optional("take").map(Self.count)
        skip = try root.optional("skip").map(Self.count)
    }

    private static func count(_ cursor: JSONCursor) throws(JSONShapeError) -> Int {
        let number = try cursor.number()
        guard number > 0 else { return 0 }
        guard number < Double(maximumCount) else { return maximumCount }
        return Int(number.rounded(.up))
    }

    /// Beyond this a count means "all" anyway: 2^53 keeps it exact as a JavaScript number, and half of `Int.max` on
    /// 32-bit systems keeps `skip + take` from overflowing.
    private static let maximumCount = Int(exactly: 0x1p53) ?? Int.max / 2

    /// The conditions alone, for matching single objects.
    public var contextFilter: ContextFilter { ContextFilter(conditions) }

    public var json: JSONObject {
        var json = JSONObject()
        json.set("conditions", ifPresent: conditions?.json)
        json.set("orderByProperties", ifPresent: orderByProperties.map { .array($0.map(\.json)) })
        json.set("take", ifPresent: take.map { .number(Double($0)) })
        json.set("skip", ifPresent: skip.map { .number(Double($0)) })
        return json
    }
}
