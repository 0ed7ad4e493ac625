import CoatyJSON
import CoatyModel

/// How shared objects travel between agents, in standard Coaty events only, so that any Coaty agent can take part:
///
/// - The object is a Coaty object of core type `CoatyObject` and object type `coaty-edge.SharedObject`, whose
///   `name` and `externalId` are the shared object's name and whose `parentObjectId` is its host's identity:
///   `{"version": 4, "data": {"fanOn": 60}, "expiry"?: minutes, "readOnly"?: true, "change"?: {...}}`.
/// - The host advertises it when it is created, after every accepted change (with `change`: `{"key", "value"}`
///   or `{"key", "deleted": true}`) and whenever it comes online, and resolves Discovers that match it (clients
///   discover by `externalId` = name and `objectTypes` = [`coaty-edge.SharedObject`]).
/// - A change is an Update of an object with the shared object's objectId and a `request`:
///   `{"operation": "set", "key", "value", "expectedVersion"?}`, `{"operation": "delete", "key",
///   "expectedVersion"?}` or `{"operation": "deleteObject"}`. The host answers with a Complete carrying the
///   shared object as it is afterwards; a refused request has `privateData` `{"refused": message, "reason": code}`.
/// - Messages are Channel events on channel `coaty-edge.SharedObject` with one object of type
///   `coaty-edge.SharedMessage` whose `name` is the shared object's name, `parentObjectId` its objectId, and
///   `message` any JSON value.
/// - The host deadvertises the objectId when the object is deleted or expires; a Deadvertise of the host's
///   identity (its stop or its last will) makes its objects unavailable.
package enum SharedObjectWire {
    public static let objectType = "coaty-edge.SharedObject"
    public static let messageObjectType = "coaty-edge.SharedMessage"
    public static let channelId = "coaty-edge.SharedObject"

    /// The Discover for a shared object by name.
    public static func discover(name: String) -> DiscoverEvent {
        .externalId(name, objectTypes: [objectType])
    }
}

/// A shared object as one advertisement, resolve or complete carries it.
package struct SharedObjectState: Sendable, Hashable {
    public var objectId: String
    public var name: String
    /// The identity of the agent that hosts the object.
    public var hostId: String
    public var version: Int
    public var data: JSONObject
    /// Minutes without a change or message after which the host deletes the object.
    public var expiryMinutes: Double?
    /// Only the host may change or delete it.
    public var isReadOnly: Bool
    /// The change that led to this version, in an advertisement after an accepted change.
    public var change: SharedChange?

    public init(
        objectId: String = CoatyUUID.random(), name: String, hostId: String, version: Int = 0, data: JSONObject = [:],
        expiryMinutes: Double? = nil, isReadOnly: Bool = false, change: SharedChange? = nil
    ) {
        self.objectId = objectId
        self.name = name
        self.hostId = hostId
        self.version = version
        self.data = data
        self.expiryMinutes = expiryMinutes
        self.isReadOnly = isReadOnly
        self.change = change
    }

    /// Reads a shared object from another agent; nil when the object is not one.
    public init?(_ object: CoatyObject) {
        guard object.objectType == SharedObjectWire.objectType else { return nil }
        do {
            try self.init(validating: object)
        } catch {
            return nil
        }
    }

    init(validating object: CoatyObject) throws(JSONShapeError) {
        let root = JSONCursor(object.jsonValue)
        guard let hostId = object.parentObjectId else {
            throw root.error("a shared object needs parentObjectId (its host)")
        }
        objectId = object.objectId
        name = object.name
        guard CoatyName.isValid(name), object.externalId == name else {
            throw root.error("a shared object's name must be a valid Coaty name and equal its externalId")
        }
        self.hostId = hostId
        version = try root.required("version").integer(in: 0...Int.max)
        data = try root.required("data").object()
        expiryMinutes = try root.optional("expiry")?.number(
            in: Double.leastNonzeroMagnitude...Double.greatestFiniteMagnitude)
        isReadOnly = try root.optional("readOnly")?.bool() ?? false
        change = try root.optional("change").map { cursor throws(JSONShapeError) in
            let key = try cursor.required("key").nonEmptyString()
            if try cursor.optional("deleted")?.bool() == true {
                return SharedChange(key: key, value: nil, version: version)
            }
            return SharedChange(key: key, value: try cursor.required("value").value, version: version)
        }
    }

    public var object: CoatyObject {
        var object = CoatyObject(
            coreType: .coatyObject, objectType: SharedObjectWire.objectType, objectId: objectId, name: name)
        object.externalId = name
        object.parentObjectId = hostId
        object["version"] = .number(Double(version))
        object["data"] = .object(data)
        object["expiry"] = expiryMinutes.map(JSONValue.number)
        object["readOnly"] = isReadOnly ? true : nil
        if let change {
            var json: JSONObject = ["key": .string(change.key)]
            if let value = change.value {
                json["value"] = value
            } else {
                json["deleted"] = true
            }
            object["change"] = .object(json)
        }
        return object
    }

    public var snapshot: SharedSnapshot {
        SharedSnapshot(objectId: objectId, hostId: hostId, version: version, data: data)
    }
}

/// What a client asks the host of a shared object to do.
package enum SharedObjectRequest: Sendable, Hashable {
    case set(key: String, value: JSONValue, expectedVersion: Int?)
    case delete(key: String, expectedVersion: Int?)
    case deleteObject

    public static let maximumKeyLength = 256

    /// The request as the `request` member of an Update.
    public var json: JSONValue {
        var json = JSONObject()
        switch self {
        case .set(let key, let value, let expectedVersion):
            json = ["operation": "set", "key": .string(key), "value": value]
            json.set("expectedVersion", ifPresent: expectedVersion.map { .number(Double($0)) })
        case .delete(let key, let expectedVersion):
            json = ["operation": "delete", "key": .string(key)]
            json.set("expectedVersion", ifPresent: expectedVersion.map { .number(Double($0)) })
        case .deleteObject:
            json = ["operation": "deleteObject"]
        }
        return .object(json)
    }

    /// Reads the `request` of an Update; the error names the JSON path within the Update's object.
    public init(updating object: CoatyObject) throws(JSONShapeError) {
        let request = try JSONCursor(object.jsonValue).required("request")
        switch try request.required("operation").oneOf(["set", "delete", "deleteObject"]) {
        case "set":
            try request.allowOnly(["operation", "key", "value", "expectedVersion"])
            self = .set(
                key: try Self.key(request), value: try request.required("value").value,
                expectedVersion: try request.optional("expectedVersion")?.integer(in: 0...Int.max))
        case "delete":
            try request.allowOnly(["operation", "key", "expectedVersion"])
            self = .delete(
                key: try Self.key(request),
                expectedVersion: try request.optional("expectedVersion")?.integer(in: 0...Int.max))
        default:
            try request.allowOnly(["operation"])
            self = .deleteObject
        }
    }

    private static func key(_ request: JSONCursor) throws(JSONShapeError) -> String {
        let key = try request.required("key")
        let text = try key.nonEmptyString()
        guard text.utf8.count <= maximumKeyLength else {
            throw key.error("a key has at most \(maximumKeyLength) bytes")
        }
        return text
    }

    /// The Update that asks the host of `state` for this.
    func update(of objectId: String, name: String) -> UpdateEvent {
        var object = CoatyObject(
            coreType: .coatyObject, objectType: SharedObjectWire.objectType, objectId: objectId, name: name)
        object.externalId = name
        object["request"] = json
        return UpdateEvent(object: object)
    }

    public var key: String? {
        switch self {
        case .set(let key, _, _), .delete(let key, _): key
        case .deleteObject: nil
        }
    }

    public var value: JSONValue? {
        if case .set(_, let value, _) = self { return value }
        return nil
    }

    public var expectedVersion: Int? {
        switch self {
        case .set(_, _, let expectedVersion), .delete(_, let expectedVersion): expectedVersion
        case .deleteObject: nil
        }
    }
}

/// A message sent to a shared object, as it travels on the channel.
struct SharedMessageObject {
    var objectName: String
    var objectId: String
    var message: JSONValue

    init(objectName: String, objectId: String, message: JSONValue) {
        self.objectName = objectName
        self.objectId = objectId
        self.message = message
    }

    init?(_ object: CoatyObject) {
        guard object.objectType == SharedObjectWire.messageObjectType, let parent = object.parentObjectId,
            let message = object["message"]
        else { return nil }
        self.init(objectName: object.name, objectId: parent, message: message)
    }

    var object: CoatyObject {
        var object = CoatyObject(
            coreType: .coatyObject, objectType: SharedObjectWire.messageObjectType, name: objectName)
        object.parentObjectId = objectId
        object["message"] = message
        return object
    }
}

// MARK: - What clients see

/// A shared object's whole data at one version.
public struct SharedSnapshot: Sendable, Hashable {
    public var objectId: String
    public var hostId: String
    public var version: Int
    public var data: JSONObject

    public init(objectId: String, hostId: String, version: Int, data: JSONObject) {
        self.objectId = objectId
        self.hostId = hostId
        self.version = version
        self.data = data
    }
}

/// One accepted change: a key set to a value, or deleted (`value` nil).
public struct SharedChange: Sendable, Hashable {
    public var key: String
    public var value: JSONValue?
    public var version: Int

    public init(key: String, value: JSONValue?, version: Int) {
        self.key = key
        self.value = value
        self.version = version
    }

    public var isDeletion: Bool { value == nil }
}

/// A message sent to a shared object, as every connected client receives it.
public struct SharedMessage: Sendable, Hashable {
    public var message: JSONValue
    /// The identity of the sending agent.
    public var senderId: String

    public init(message: JSONValue, senderId: String) {
        self.message = message
        self.senderId = senderId
    }
}

/// What a connection to a shared object reports, in order.
public enum SharedObjectEvent: Sendable, Hashable {
    /// The whole data: first on connecting, and again whenever the client had to catch up (a host that came back,
    /// changes missed while offline).
    case snapshot(SharedSnapshot)
    case changed(SharedChange)
    case message(SharedMessage)
    /// The host is gone (stopped or died); the last data is kept, and a snapshot follows when a host is back.
    case unavailable
    /// The object was deleted (or expired); the events end.
    case deleted
}
