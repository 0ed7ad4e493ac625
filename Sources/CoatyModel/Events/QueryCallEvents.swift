import CoatyJSON

/// `{"objectTypes"|"coreTypes": [...], "objectFilter"?, "objectJoinConditions"?}` with exactly one type list.
public struct QueryEvent: Sendable, Hashable, CoatyEventPayload {
    public private(set) var objectTypes: [String]?
    public private(set) var coreTypes: [CoreType]?
    public var objectFilter: ObjectFilter?
    public var objectJoinConditions: ObjectJoinConditions?

    public init(
        objectTypes: [String], objectFilter: ObjectFilter? = nil, objectJoinConditions: ObjectJoinConditions? = nil
    ) {
        self.objectTypes = objectTypes
        self.objectFilter = objectFilter
        self.objectJoinConditions = objectJoinConditions
    }

    public init(
        coreTypes: [CoreType], objectFilter: ObjectFilter? = nil, objectJoinConditions: ObjectJoinConditions? = nil
    ) {
        self.coreTypes = coreTypes
        self.objectFilter = objectFilter
        self.objectJoinConditions = objectJoinConditions
    }

    public init(payload: JSONValue) throws(JSONShapeError) {
        let root = JSONCursor(payload)
        objectTypes = try root.optional("objectTypes")?.objectTypes()
        coreTypes = try root.optional("coreTypes")?.coreTypes()
        guard (objectTypes == nil) != (coreTypes == nil) else {
            throw root.error("a Query needs exactly one of \"objectTypes\" and \"coreTypes\"")
        }
        objectFilter = try root.optional("objectFilter").map { filter throws(JSONShapeError) in
            try ObjectFilter(json: filter.value, at: filter.path)
        }
        objectJoinConditions = try root.optional("objectJoinConditions").map { conditions throws(JSONShapeError) in
            try ObjectJoinConditions(json: conditions.value, at: conditions.path)
        }
    }

    /// Whether an object is of the queried types and matches the filter's conditions.
    public func matches(_ object: CoatyObject) -> Bool {
        (coreTypes?.contains(object.coreType) ?? true) && (objectTypes?.contains(object.objectType) ?? true)
            && ObjectMatcher.matches(object, filter: objectFilter?.contextFilter)
    }

    /// A Retrieve answers a Query only with objects of the queried types.
    public func accepts(_ retrieve: RetrieveEvent) -> Bool {
        retrieve.objects.allSatisfy {
            (coreTypes?.contains($0.coreType) ?? true) && (objectTypes?.contains($0.objectType) ?? true)
        }
    }

    public func addMembers(to payload: inout some JSONMembers) {
        payload.add("objectTypes", ifPresent: objectTypes.map { .array($0.map(JSONValue.string)) })
        payload.add("coreTypes", ifPresent: coreTypes.map { .array($0.map { .string($0.rawValue) }) })
        // Always sent, `{}` when there is none: Coaty JS 2.4.1 reads `objectFilter.skip` unguarded while
        // validating a Query, so it drops (and cannot publish) a Query without one.
        payload.add("objectFilter", .object((objectFilter ?? ObjectFilter()).json))
        payload.add("objectJoinConditions", ifPresent: objectJoinConditions?.json)
    }
}

/// A remote operation call: `{"parameters"?: [...] | {...}, "filter"?: ContextFilter}`; the operation name is
/// in the topic.
public struct CallEvent: Sendable, Hashable, CoatyEventPayload {
    public var operation: String
    public var parameters: JSONValue?
    public var filter: ContextFilter?

    /// - Parameter parameters: an array (by position) or an object (by name).
    public init(operation: String, parameters: JSONValue? = nil, filter: ContextFilter? = nil) {
        self.operation = operation
        self.parameters = parameters
        self.filter = filter
    }

    public init(operation: String, payload: JSONValue) throws(JSONShapeError) {
        self.operation = operation
        // Parameters without a context filter, in one pass and without cursors (as `ChannelEvent` reads its common
        // shape); a filter, and every malformed payload, the general way below.
        if case .object(let members) = payload {
            var parameters: JSONValue?
            var isCommon = true
            for member in members {
                switch (member.key, member.value) {
                case ("parameters", .array), ("parameters", .object): parameters = member.value
                case ("parameters", _), ("filter", _): isCommon = false
                default: continue
                }
            }
            if isCommon {
                self.parameters = parameters
                return
            }
        }
        let root = JSONCursor(payload)
        if let parameters = try root.optional("parameters") {
            switch parameters.value {
            case .array, .object: self.parameters = parameters.value
            default: throw parameters.error("parameters must be an array or an object")
            }
        }
        filter = try root.optional("filter").map { filter throws(JSONShapeError) in
            try ContextFilter(json: filter.value, at: filter.path)
        }
    }

    /// The parameter at a position, for calls with an array of parameters.
    public func parameter(at index: Int) -> JSONValue? { parameters?[index] }

    /// The parameter with a name, for calls with an object of parameters.
    public func parameter(named name: String) -> JSONValue? { parameters?[name] }

    /// Whether an observer with the given context receives the call (Coaty 2's rule, see `ObjectMatcher`).
    public func isDelivered(toObserverWith context: CoatyObject?) -> Bool {
        ObjectMatcher.matchesCall(filter: filter, context: context)
    }

    public func addMembers(to payload: inout some JSONMembers) {
        payload.add("parameters", ifPresent: parameters)
        payload.add("filter", ifPresent: filter.map { .object($0.json) })
    }
}
