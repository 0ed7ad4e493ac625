import CoatyJSON

/// `{"object": <object>, "privateData"?: {...}}`
public struct AdvertiseEvent: Sendable, Hashable {
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

    public var payload: JSONObject {
        var json: JSONObject = ["object": object.jsonValue]
        json.set("privateData", ifPresent: privateData.map(JSONValue.object))
        return json
    }

    /// The topic filters the event is published under: always the core type, and the object type as well when it
    /// is not the core object type.
    public var topicFilters: [String] {
        var filters = [object.coreType.rawValue]
        if object.objectType != object.coreType.objectType { filters.append(":" + object.objectType) }
        return filters
    }
}

/// `{"objectIds": [...]}`
public struct DeadvertiseEvent: Sendable, Hashable {
    public var objectIds: [String]

    public init(objectIds: [String]) {
        self.objectIds = objectIds
    }

    public init(payload: JSONValue) throws(JSONShapeError) {
        objectIds = try JSONCursor(payload).required("objectIds").elements().map { id throws(JSONShapeError) in
            try id.nonEmptyString()
        }
    }

    public var payload: JSONObject {
        ["objectIds": .array(objectIds.map(JSONValue.string))]
    }
}

/// `{"object": <object>}` or `{"objects": [...]}`, never both, with optional `privateData`.
public struct ChannelEvent: Sendable, Hashable {
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

    public var payload: JSONObject {
        var json = JSONObject()
        switch content {
        case .object(let object): json["object"] = object.jsonValue
        case .objects(let objects): json["objects"] = .array(objects.map(\.jsonValue))
        }
        json.set("privateData", ifPresent: privateData.map(JSONValue.object))
        return json
    }
}

/// A router's instruction to associate (route present) or disassociate (route absent) an IO source and actor.
/// `{"ioSourceId", "ioActorId", "associatingRoute"?, "updateRate"?}`. Coaty JS never sends `isExternalRoute`,
/// so it is not part of the wire form; receivers treat it as false.
public struct AssociateEvent: Sendable, Hashable {
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

    public var payload: JSONObject {
        var json: JSONObject = ["ioSourceId": .string(ioSourceId), "ioActorId": .string(ioActorId)]
        json.set("associatingRoute", ifPresent: associatingRoute.map(JSONValue.string))
        json.set("updateRate", ifPresent: updateRate.map(JSONValue.number))
        return json
    }
}
