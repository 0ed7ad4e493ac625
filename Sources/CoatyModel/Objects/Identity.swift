import CoatyJSON

/// The identity of an agent (a container). Its objectId is the sourceId of every event the agent publishes.
public struct Identity: CoatyObjectConvertible {
    public static var coreType: CoreType { .identity }
    public let object: CoatyObject

    public init(_ object: CoatyObject) throws(JSONShapeError) {
        try Self.checkType(of: object)
        self.object = object
    }

    public init(objectId: String = CoatyUUID.random(), name: String = "Coaty Agent") {
        object = CoatyObject(unchecked: [
            "objectId": .string(objectId), "name": .string(name),
            "objectType": .string(CoreType.identity.objectType), "coreType": .string(CoreType.identity.rawValue),
        ])
    }

    /// The identity configured as `agentIdentity`, completed as Coaty JS does: a fresh objectId and the name
    /// "Coaty Agent" unless given, other properties kept, objectType and coreType always those of Identity.
    public init(configured properties: JSONObject, at path: JSONPath = .root) throws(JSONShapeError) {
        var json: JSONObject = ["objectId": .string(CoatyUUID.random()), "name": "Coaty Agent"]
        json = json.merging(properties)
        json["objectType"] = .string(CoreType.identity.objectType)
        json["coreType"] = .string(CoreType.identity.rawValue)
        try self.init(CoatyObject(validating: .object(json), at: path))
    }
}
