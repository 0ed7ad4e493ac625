import CoatyJSON

/// How a Query asks the answering side to join related objects into each result object:
/// `{"localProperty", "asProperty", "isLocalPropertyArray"?, "isOneToOneRelation"?}`.
///
/// The two flags stay optional so that a received condition is written back as it came; absent means `false`.
public struct ObjectJoinCondition: Sendable, Hashable {
    public var localProperty: String
    public var asProperty: String
    public var isLocalPropertyArray: Bool?
    public var isOneToOneRelation: Bool?

    public init(
        localProperty: String, asProperty: String, isLocalPropertyArray: Bool? = nil, isOneToOneRelation: Bool? = nil
    ) {
        self.localProperty = localProperty
        self.asProperty = asProperty
        self.isLocalPropertyArray = isLocalPropertyArray
        self.isOneToOneRelation = isOneToOneRelation
    }

    /// Reads a condition as Coaty JS's `isJoinConditionValid` checks it (the names may be empty strings).
    public init(json: JSONValue, at path: JSONPath = .root) throws(JSONShapeError) {
        let root = JSONCursor(json, path: path)
        localProperty = try root.required("localProperty").string()
        asProperty = try root.required("asProperty").string()
        isLocalPropertyArray = try root.optional("isLocalPropertyArray")?.bool()
        isOneToOneRelation = try root.optional("isOneToOneRelation")?.bool()
    }

    public var json: JSONObject {
        var json: JSONObject = ["localProperty": .string(localProperty), "asProperty": .string(asProperty)]
        json.set("isLocalPropertyArray", ifPresent: isLocalPropertyArray.map(JSONValue.bool))
        json.set("isOneToOneRelation", ifPresent: isOneToOneRelation.map(JSONValue.bool))
        return json
    }
}

/// The `objectJoinConditions` of a Query: one condition or an array of them, kept in the form received.
public enum ObjectJoinConditions: Sendable, Hashable {
    case single(ObjectJoinCondition)
    case list([ObjectJoinCondition])

    public init(json: JSONValue, at path: JSONPath = .root) throws(JSONShapeError) {
        if case .array(let elements) = json {
            var conditions: [ObjectJoinCondition] = []
            conditions.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                conditions.append(try ObjectJoinCondition(json: element, at: path.appending(index)))
            }
            self = .list(conditions)
        } else {
            self = .single(try ObjectJoinCondition(json: json, at: path))
        }
    }

    public var conditions: [ObjectJoinCondition] {
        switch self {
        case .single(let condition): [condition]
        case .list(let conditions): conditions
        }
    }

    public var json: JSONValue {
        switch self {
        case .single(let condition): .object(condition.json)
        case .list(let conditions): .array(conditions.map { .object($0.json) })
        }
    }
}
