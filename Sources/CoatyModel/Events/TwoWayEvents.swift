import CoatyJSON

/// What a Discover asks for; exactly the forms Coaty JS accepts.
public struct DiscoverEvent: Sendable, Hashable, CoatyEventPayload {
    public private(set) var externalId: String?
    public private(set) var objectId: String?
    public private(set) var objectTypes: [String]?
    public private(set) var coreTypes: [CoreType]?

    private init(externalId: String?, objectId: String?, objectTypes: [String]?, coreTypes: [CoreType]?) {
        self.externalId = externalId
        self.objectId = objectId
        self.objectTypes = objectTypes
        self.coreTypes = coreTypes
    }

    public static func objectId(_ objectId: String) -> DiscoverEvent {
        DiscoverEvent(externalId: nil, objectId: objectId, objectTypes: nil, coreTypes: nil)
    }

    public static func externalId(_ externalId: String, objectTypes: [String]? = nil, coreTypes: [CoreType]? = nil)
        -> DiscoverEvent
    {
        DiscoverEvent(externalId: externalId, objectId: nil, objectTypes: objectTypes, coreTypes: coreTypes)
    }

    public static func externalId(_ externalId: String, objectId: String) -> DiscoverEvent {
        DiscoverEvent(externalId: externalId, objectId: objectId, objectTypes: nil, coreTypes: nil)
    }

    public static func objectTypes(_ objectTypes: [String]) -> DiscoverEvent {
        DiscoverEvent(externalId: nil, objectId: nil, objectTypes: objectTypes, coreTypes: nil)
    }

    public static func coreTypes(_ coreTypes: [CoreType]) -> DiscoverEvent {
        DiscoverEvent(externalId: nil, objectId: nil, objectTypes: nil, coreTypes: coreTypes)
    }

    public init(payload: JSONValue) throws(JSONShapeError) {
        let root = JSONCursor(payload)
        externalId = try root.optional("externalId")?.string()
        objectId = try root.optional("objectId")?.string()
        objectTypes = try root.optional("objectTypes")?.objectTypes()
        coreTypes = try root.optional("coreTypes")?.coreTypes()
        let hasTypes = objectTypes != nil || coreTypes != nil
        switch (externalId, objectId) {
        case (nil, .some), (.some, .some):
            guard !hasTypes else { throw root.error("a Discover by objectId takes no types") }
        case (.some, nil):
            break
        case (nil, nil):
            guard (objectTypes == nil) != (coreTypes == nil) else {
                throw root.error("a Discover by type needs exactly one of \"objectTypes\" and \"coreTypes\"")
            }
        }
    }

    /// Asks for types only (no ids).
    public var isDiscoveringTypes: Bool { externalId == nil && objectId == nil }
    /// Asks for one objectId only.
    public var isDiscoveringObjectId: Bool { externalId == nil && objectId != nil }

    public func isCoreTypeCompatible(_ coreType: CoreType) -> Bool { coreTypes?.contains(coreType) ?? false }
    public func isObjectTypeCompatible(_ objectType: String) -> Bool { objectTypes?.contains(objectType) ?? false }

    /// Whether the object satisfies every criterion given.
    public func matches(_ object: CoatyObject) -> Bool {
        (objectId == nil || object.objectId == objectId) && (externalId == nil || object.externalId == externalId)
            && (coreTypes?.contains(object.coreType) ?? true) && (objectTypes?.contains(object.objectType) ?? true)
    }

    /// Whether a Resolve is a valid answer, as Coaty JS checks responses before handing them on.
    public func accepts(_ resolve: ResolveEvent) -> Bool {
        guard let object = resolve.object else { return true }
        return matches(object)
    }

    public func addMembers(to payload: inout some JSONMembers) {
        payload.add("externalId", ifPresent: externalId.map(JSONValue.string))
        payload.add("objectId", ifPresent: objectId.map(JSONValue.string))
        payload.add("objectTypes", ifPresent: objectTypes.map { .array($0.map(JSONValue.string)) })
        payload.add("coreTypes", ifPresent: coreTypes.map { .array($0.map { .string($0.rawValue) }) })
    }
}

/// `{"object"?, "relatedObjects"?, "privateData"?}` with at least one of the first two.
public struct ResolveEvent: Sendable, Hashable, CoatyEventPayload {
    public var object: CoatyObject?
    public var relatedObjects: [CoatyObject]?
    public var privateData: JSONObject?

    public init(object: CoatyObject?, relatedObjects: [CoatyObject]? = nil, privateData: JSONObject? = nil) {
        precondition(object != nil || relatedObjects != nil, "a Resolve needs an object or related objects")
        self.object = object
        self.relatedObjects = relatedObjects
        self.privateData = privateData
    }

    public init(payload: JSONValue) throws(JSONShapeError) {
        let root = JSONCursor(payload)
        object = try root.optional("object").map { object throws(JSONShapeError) in
            try CoatyObject(validating: object)
        }
        relatedObjects = try root.optional("relatedObjects").map { related throws(JSONShapeError) in
            try related.elements().map { element throws(JSONShapeError) in
                try CoatyObject(validating: element)
            }
        }
        guard object != nil || relatedObjects != nil else {
            throw root.error("needs \"object\" or \"relatedObjects\"")
        }
        privateData = try root.optional("privateData")?.object()
    }

    public func addMembers(to payload: inout some JSONMembers) {
        payload.add("object", ifPresent: object?.jsonValue)
        payload.add("relatedObjects", ifPresent: relatedObjects.map { .array($0.map(\.jsonValue)) })
        payload.add("privateData", ifPresent: privateData.map(JSONValue.object))
    }
}

/// `{"object": <the whole changed object>}`; Coaty 2 has no partial updates.
public struct UpdateEvent: Sendable, Hashable, CoatyEventPayload {
    public var object: CoatyObject

    public init(object: CoatyObject) {
        self.object = object
    }

    public init(payload: JSONValue) throws(JSONShapeError) {
        let object = try JSONCursor(payload).required("object")
        self.object = try CoatyObject(validating: object)
    }

    public func addMembers(to payload: inout some JSONMembers) {
        payload.add("object", object.jsonValue)
    }

    /// Like Advertise: the core type, and the object type when it differs from the core object type.
    public var topicFilters: [String] {
        let (coreType, objectType) = object.topicFilters
        return objectType.map { [coreType, $0] } ?? [coreType]
    }

    /// A Complete answers an Update only with the same object id.
    public func accepts(_ complete: CompleteEvent) -> Bool {
        complete.object.objectId == object.objectId
    }
}

/// `{"object": <object>, "privateData"?}`
public struct CompleteEvent: Sendable, Hashable, CoatyEventPayload {
    public var object: CoatyObject
    public var privateData: JSONObject?

    public init(object: CoatyObject, privateData: JSONObject? = nil) {
        self.object = object
        self.privateData = privateData
    }

    public init(payload: JSONValue) throws(JSONShapeError) {
        let root = JSONCursor(payload)
        let object = try root.required("object")
        self.object = try CoatyObject(validating: object)
        privateData = try root.optional("privateData")?.object()
    }

    public func addMembers(to payload: inout some JSONMembers) {
        payload.add("object", object.jsonValue)
        payload.add("privateData", ifPresent: privateData.map(JSONValue.object))
    }
}

/// `{"objects": [...], "privateData"?}`; the array may be empty.
public struct RetrieveEvent: Sendable, Hashable, CoatyEventPayload {
    public var objects: [CoatyObject]
    public var privateData: JSONObject?

    public init(objects: [CoatyObject], privateData: JSONObject? = nil) {
        self.objects = objects
        self.privateData = privateData
    }

    public init(payload: JSONValue) throws(JSONShapeError) {
        let root = JSONCursor(payload)
        objects = try root.required("objects").elements().map { element throws(JSONShapeError) in
            try CoatyObject(validating: element)
        }
        privateData = try root.optional("privateData")?.object()
    }

    public func addMembers(to payload: inout some JSONMembers) {
        payload.add("objects", .array(objects.map(\.jsonValue)))
        payload.add("privateData", ifPresent: privateData.map(JSONValue.object))
    }
}

/// The answer to a Call: a result (any JSON, `null` included) or an error, with optional execution info.
public struct ReturnEvent: Sendable, Hashable, CoatyEventPayload {
    public enum Outcome: Sendable, Hashable {
        case result(JSONValue)
        case error(code: Int, message: String)
    }

    /// The only predefined error: -32602, "Invalid params". Codes -32768...-32000 are reserved.
    public static let invalidParameters = Outcome.error(code: -32602, message: "Invalid params")

    public var outcome: Outcome
    public var executionInfo: JSONValue?

    public init(_ outcome: Outcome, executionInfo: JSONValue? = nil) {
        self.outcome = outcome
        self.executionInfo = executionInfo
    }

    public init(payload: JSONValue) throws(JSONShapeError) {
        // A result, in one pass and without cursors (as `ChannelEvent` reads its common shape); an error, and every
        // malformed payload, the general way below.
        if case .object(let members) = payload {
            var result: JSONValue?
            var executionInfo: JSONValue?
            var hasError = false
            for member in members {
                switch member.key {
                case "result": result = member.value
                case "error": hasError = true
                case "executionInfo": executionInfo = member.value
                default: continue
                }
            }
            if let result, !hasError {
                outcome = .result(result)
                self.executionInfo = executionInfo
                return
            }
        }
        let root = JSONCursor(payload)
        let result = try root.optional("result")
        let error = try root.optional("error")
        switch (result, error) {
        case (let result?, nil):
            outcome = .result(result.value)
        case (nil, let error?):
            let code = try error.required("code").integer()
            let message = try error.required("message").string()
            outcome = .error(code: code, message: message)
        default:
            throw root.error("needs exactly one of \"result\" and \"error\"")
        }
        executionInfo = try root.optional("executionInfo")?.value
    }

    public func addMembers(to payload: inout some JSONMembers) {
        switch outcome {
        case .result(let result):
            payload.add("result", result)
        case .error(let code, let message):
            payload.add("error", ["code": .number(Double(code)), "message": .string(message)])
        }
        payload.add("executionInfo", ifPresent: executionInfo)
    }
}

extension JSONCursor {
    /// A list of object types, as Discover and Query carry them: non-empty strings.
    func objectTypes() throws(JSONShapeError) -> [String] {
        try elements().map { type throws(JSONShapeError) in try type.nonEmptyString() }
    }

    /// A list of core type names, as Discover and Query carry them.
    func coreTypes() throws(JSONShapeError) -> [CoreType] {
        try elements().map { type throws(JSONShapeError) in
            let name = try type.string()
            guard let coreType = CoreType(rawValue: name) else { throw type.error("\"\(name)\" is not a core type") }
            return coreType
        }
    }
}
