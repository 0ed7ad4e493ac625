import CoatyJSON

/// `{"object": <object>, "privateData"?: {...}}`
public struct AdvertiseEvent: Sendable, Hashable, CoatyEventPayload {
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

    /// The topic filters the event is published under: always the core type, and the object type as well when it
    /// is not the core object type.
    public var topicFilters: [String] {
        let (coreType, objectType) = object.topicFilters
        return objectType.map { [coreType, $0] } ?? [coreType]
    }
}

/// `{"objectIds": [...]}`
public struct DeadvertiseEvent: Sendable, Hashable, CoatyEventPayload {
    public var objectIds: [String]

    public init(objectIds: [String]) {
        self.objectIds = objectIds
    }

    public init(payload: JSONValue) throws(JSONShapeError) {
        objectIds = try JSONCursor(payload).required("objectIds").elements().map { id throws(JSONShapeError) in
            try id.nonEmptyString()
        }
    }

    public func addMembers(to payload: inout some JSONMembers) {
        payload.add("objectIds", .array(objectIds.map(JSONValue.string)))
    }
}

/// `{"object": <object>}` or `{"objects": [...]}`, never both, with optional `privateData`.
public struct ChannelEvent: Sendable, Hashable, CoatyEventPayload {
    public enum Content: Sendable, Hashable {
        case object(CoatyObject)
        case objects([CoatyObject])
    }

    public var channelId: String
    public var content: Content
    public var privateData: JSONObject?

    public init(channelId: String, content: Content, privateData: JSONObject? = nil) {
        self.channelId = channelId
        self.content = content
        self.privateData = privateData
    }

    public init(channelId: String, payload: JSONValue) throws(JSONShapeError) {
        self.channelId = channelId
        // The common shape, one object and maybe private data, in one pass over the members and without cursors:
        // every Channel event received is decoded here, and three lookups with a cursor each cost more than the
        // object's own check. Any other shape (and every error) takes the general path below.
        if case .object(let members) = payload {
            var single: JSONObject?
            var privateData: JSONObject?
            var isCommon = true
            for member in members {
                switch (member.key, member.value) {
                case ("object", .object(let object)): single = object
                case ("privateData", .object(let data)): privateData = data
                case ("object", _), ("objects", _), ("privateData", _): isCommon = false
                default: continue
                }
            }
            if isCommon, let single {
                content = .object(
                    try CoatyObject(validating: .object(single), at: JSONPath([.key("object")]), nesting: 0))
                self.privateData = privateData
                return
            }
        }
        let root = JSONCursor(payload)
        let single = try root.optional("object")
        let many = try root.optional("objects")
        switch (single, many) {
        case (let single?, nil):
            content = .object(try CoatyObject(validating: single))
        case (nil, let many?):
            content = .objects(
                try many.elements().map { element throws(JSONShapeError) in
                    try CoatyObject(validating: element)
                })
        default:
            throw root.error("needs exactly one of \"object\" and \"objects\"")
        }
        privateData = try root.optional("privateData")?.object()
    }

    public var objects: [CoatyObject] {
        switch content {
        case .object(let object): [object]
        case .objects(let objects): objects
        }
    }

    public func addMembers(to payload: inout some JSONMembers) {
        switch content {
        case .object(let object): payload.add("object", object.jsonValue)
        case .objects(let objects): payload.add("objects", .array(objects.map(\.jsonValue)))
        }
        payload.add("privateData", ifPresent: privateData.map(JSONValue.object))
    }
}

/// A router's instruction to associate (route present) or disassociate (route absent) an IO source and actor.
/// `{"ioSourceId", "ioActorId", "associatingRoute"?, "updateRate"?}`. Coaty JS never sends `isExternalRoute`,
/// so it is not part of the wire form; receivers treat it as false.
public struct AssociateEvent: Sendable, Hashable, CoatyEventPayload {
    public var ioContextName: String
    public var ioSourceId: String
    public var ioActorId: String
    public var associatingRoute: String?
    /// Milliseconds.
    public var updateRate: Double?

    public init(
        ioContextName: String, ioSourceId: String, ioActorId: String, associatingRoute: String?, updateRate: Double?
    ) {
        self.ioContextName = ioContextName
        self.ioSourceId = ioSourceId
        self.ioActorId = ioActorId
        self.associatingRoute = associatingRoute
        self.updateRate = updateRate
    }

    public init(ioContextName: String, payload: JSONValue) throws(JSONShapeError) {
        self.ioContextName = ioContextName
        let root = JSONCursor(payload)
        ioSourceId = try root.required("ioSourceId").nonEmptyString()
        ioActorId = try root.required("ioActorId").nonEmptyString()
        if let route = try root.optional("associatingRoute") {
            let topic = try route.nonEmptyString()
            // Sources publish on the route and actors subscribe to it: a wildcard would have every actor of the
            // pair subscribe to other traffic and the source fail each publication, so the router is wrong.
            guard CoatyName.isValidPublicationTopic(topic) else {
                throw route.error("is not an MQTT topic to publish on (no wildcards or NUL)")
            }
            associatingRoute = topic
        } else {
            associatingRoute = nil
        }
        updateRate = try root.optional("updateRate")?.number()
    }

    public var isAssociation: Bool { associatingRoute != nil }

    public func addMembers(to payload: inout some JSONMembers) {
        payload.add("ioSourceId", .string(ioSourceId))
        payload.add("ioActorId", .string(ioActorId))
        payload.add("associatingRoute", ifPresent: associatingRoute.map(JSONValue.string))
        payload.add("updateRate", ifPresent: updateRate.map(JSONValue.number))
    }
}
