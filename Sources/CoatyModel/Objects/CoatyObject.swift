import CoatyJSON

/// A Coaty object: the JSON object that travels in events, with typed access to the fields every object has.
///
/// The object is its JSON. Properties the agent does not know (an application's `operatingState` on an
/// IoContext, say) are kept in place and travel on when the object is republished; CoatySwift drops them.
/// Construct objects with the typed initializers of `Identity`, `IoSource` etc., or validate received JSON with
/// `init(validating:)`.
public struct CoatyObject: Sendable, Hashable {
    public private(set) var json: JSONObject

    /// Validates `value` as Coaty JS validates received objects: the core fields, and the shape required by the
    /// object's core type.
    public init(validating value: JSONValue, at path: JSONPath = .root) throws(JSONShapeError) {
        try self.init(validating: value, at: path, nesting: 0)
    }

    /// `path` is put together only where a check needs it: to name an error, or to read fields beyond the core ones.
    init(validating value: JSONValue, at path: @autoclosure () -> JSONPath, nesting: Int) throws(JSONShapeError) {
        guard case .object(let json) = value else {
            throw JSONShapeError(path: path(), reason: "expected a Coaty object, found \(value.typeName)")
        }
        try CoatyObjectShape.validate(json, at: path, nesting: nesting)
        self.json = json
    }

    /// `init(validating:at:)` of the value under a cursor, as events read their objects: the cursor's path (an
    /// array) is made only when the object is not a plain valid one, whose core fields are all it has to check.
    init(validating cursor: JSONCursor) throws(JSONShapeError) {
        try self.init(validating: cursor.value, at: cursor.path, nesting: 0)
    }

    /// An object with the core fields in Coaty JS's order for application objects.
    public init(coreType: CoreType, objectType: String? = nil, objectId: String = CoatyUUID.random(), name: String) {
        json = [
            "name": .string(name), "coreType": .string(coreType.rawValue),
            "objectType": .string(objectType ?? coreType.objectType), "objectId": .string(objectId),
        ]
    }

    /// Wraps JSON that is already known to be valid (built by this module).
    init(unchecked json: JSONObject) {
        self.json = json
    }

    public var objectId: String {
        get { json["objectId"]?.stringValue ?? "" }
        set { json["objectId"] = .string(newValue) }
    }

    public var name: String {
        get { json["name"]?.stringValue ?? "" }
        set { json["name"] = .string(newValue) }
    }

    public var objectType: String {
        json["objectType"]?.stringValue ?? ""
    }

    public var coreType: CoreType {
        json["coreType"]?.stringValue.flatMap(CoreType.init(rawValue:)) ?? .coatyObject
    }

    public var externalId: String? {
        get { json["externalId"]?.stringValue }
        set { json["externalId"] = newValue.map(JSONValue.string) }
    }

    public var parentObjectId: String? {
        get { json["parentObjectId"]?.stringValue }
        set { json["parentObjectId"] = newValue.map(JSONValue.string) }
    }

    public var locationId: String? {
        get { json["locationId"]?.stringValue }
        set { json["locationId"] = newValue.map(JSONValue.string) }
    }

    public var isDeactivated: Bool? {
        get { json["isDeactivated"]?.boolValue }
        set { json["isDeactivated"] = newValue.map(JSONValue.bool) }
    }

    /// Any property, including application-defined ones. Setting `nil` removes it.
    public subscript(property: String) -> JSONValue? {
        get { json[property] }
        set {
            precondition(
                !CoatyObjectShape.coreFields.contains(property) || newValue != nil,
                "core field \(property) cannot be removed")
            json[property] = newValue
        }
    }

    public var jsonValue: JSONValue { .object(json) }

    /// The filters an Advertise or Update of this object is published under: always the core type, and the object
    /// type as well when it is not the core object type.
    var topicFilters: (coreType: String, objectType: String?) {
        let coreType = coreType
        let objectType = objectType
        return (coreType.rawValue, objectType == coreType.objectType ? nil : ":" + objectType)
    }
}

extension CoatyObject: CustomStringConvertible {
    public var description: String { json.serialized() }
}

/// The validation rules of Coaty JS's `CoreTypes.isObject`, per core type.
enum CoatyObjectShape {
    static let coreFields: Set<String> = ["objectId", "name", "objectType", "coreType"]

    /// How deep Coaty objects may contain Coaty objects (a Snapshot of a Snapshot of ...). Checking goes as deep as
    /// the objects do; without a limit, one message from another agent could exhaust the stack.
    static let maximumNesting = 16

    /// The core type of an object whose core fields (those every object has) are all valid, checked in one pass over
    /// its members (keys are unique); nil if one is missing or wrong, and `checkCoreFields` then says which. Every
    /// object received is checked, and the cursors of `checkCoreFields` (a lookup and a copy per field) cost more than
    /// the checks themselves.
    static func coreTypeOfValidCoreFields(_ json: JSONObject) -> CoreType? {
        var coreType: CoreType?
        var required: UInt8 = 0
        for member in json {
            switch member.key {
            case "name":
                guard case .string = member.value else { return nil }
                required |= 1
            case "objectType":
                guard case .string(let string) = member.value, !string.isEmpty else { return nil }
                required |= 2
            case "objectId":
                guard case .string(let string) = member.value, !string.isEmpty else { return nil }
                required |= 4
            case "coreType":
                guard case .string(let name) = member.value, let type = CoreType(rawValue: name) else { return nil }
                coreType = type
            case "parentObjectId", "externalId", "locationId":
                guard case .string(let string) = member.value, !string.isEmpty else { return nil }
            case "isDeactivated":
                guard case .bool = member.value else { return nil }
            default:
                continue
            }
        }
        return required == 7 ? coreType : nil
    }

    /// Checks the core fields one by one, in a fixed order, and throws for the first that is missing or wrong.
    static func checkCoreFields(of object: JSONCursor) throws(JSONShapeError) -> CoreType {
        _ = try object.required("name").string()
        _ = try object.required("objectType").nonEmptyString()
        let coreTypeName = try object.required("coreType").string()
        guard let coreType = CoreType(rawValue: coreTypeName) else {
            throw JSONShapeError(
                path: object.path.appending("coreType"), reason: "\"\(coreTypeName)\" is not a core type")
        }
        _ = try object.required("objectId").nonEmptyString()
        for key in ["parentObjectId", "externalId", "locationId"] {
            _ = try object.optional(key)?.nonEmptyString()
        }
        _ = try object.optional("isDeactivated")?.bool()
        return coreType
    }

    /// `path` is called only where a check needs it: to name an error, or to read fields beyond the core ones.
    static func validate(_ json: JSONObject, at path: () -> JSONPath, nesting: Int) throws(JSONShapeError) {
        guard nesting <= maximumNesting else {
            throw JSONShapeError(path: path(), reason: "Coaty objects nested deeper than \(maximumNesting) levels")
        }
        let validCoreType = coreTypeOfValidCoreFields(json)
        // Valid core fields are all that these core types have to check: done without a cursor or a path.
        if validCoreType == .coatyObject || validCoreType == .ioContext || validCoreType == .identity { return }
        let object = JSONCursor(.object(json), path: path())
        let coreType: CoreType
        if let validCoreType {
            coreType = validCoreType
        } else {
            coreType = try checkCoreFields(of: object)
        }
        switch coreType {
        case .coatyObject, .ioContext, .identity:
            break
        case .ioSource, .ioActor:
            _ = try object.required("valueType").nonEmptyString()
            _ = try object.optional("externalRoute")?.string()
            _ = try object.optional("updateRate")?.number(in: 0...Double.greatestFiniteMagnitude)
            _ = try object.optional("useRawIoValues")?.bool()
            if coreType == .ioSource, let strategy = try object.optional("updateStrategy") {
                _ = try strategy.integer(in: 0...3)
            }
        case .ioNode:
            for (key, expected) in [("ioSources", CoreType.ioSource), ("ioActors", .ioActor)] {
                guard let points = try object.optional(key) else { continue }
                for point in try points.elements() {
                    let nested = try CoatyObject(validating: point.value, at: point.path, nesting: nesting + 1)
                    guard nested.coreType == expected else {
                        throw point.error("expected an object of core type \(expected.rawValue)")
                    }
                }
            }
            _ = try object.optional("characteristics")?.object()
        case .task:
            _ = try object.required("creatorId").nonEmptyString()
            _ = try object.required("creationTimestamp").number()
            _ = try object.optional("startTimestamp")?.number()
            _ = try object.optional("duration")?.number()
            _ = try object.required("status").integer(in: 0...6)
            _ = try object.optional("requirements")?.object()
            _ = try object.optional("description")?.string()
            _ = try object.optional("assigneeObjectId")?.nonEmptyString()
        case .annotation:
            _ = try object.required("type").integer(in: 0...6)
            _ = try object.required("creatorId").nonEmptyString()
            _ = try object.required("creationTimestamp").number()
            _ = try object.required("status").integer(in: 0...3)
            if let variants = try object.optional("variants") {
                for variant in try variants.elements() {
                    _ = try variant.required("variant").nonEmptyString()
                    _ = try variant.required("downloadUrl").string()
                }
            }
        case .log:
            let level = try object.required("logLevel").integer()
            guard [10, 20, 30, 40, 50].contains(level) else {
                throw JSONShapeError(path: object.path.appending("logLevel"), reason: "\(level) is not a log level")
            }
            _ = try object.required("logMessage").string()
            _ = try object.required("logDate").string()
            if let tags = try object.optional("logTags") {
                for tag in try tags.elements() { _ = try tag.nonEmptyString() }
            }
            _ = try object.optional("logLabels")?.object()
            _ = try object.optional("logHost")?.object()
        case .location:
            let geoLocation = try object.required("geoLocation")
            _ = try geoLocation.required("timestamp").number()
            let coords = try geoLocation.required("coords")
            for key in ["latitude", "longitude", "accuracy"] {
                _ = try coords.required(key).number()
            }
            for key in ["altitude", "altitudeAccuracy", "heading", "speed"] {
                _ = try coords.optional(key)?.number()
            }
        case .snapshot:
            _ = try object.required("parentObjectId").nonEmptyString()
            let timestamp = try object.required("creationTimestamp").number()
            guard timestamp != 0 else {
                throw JSONShapeError(path: object.path.appending("creationTimestamp"), reason: "must not be 0")
            }
            _ = try object.required("creatorId").nonEmptyString()
            if let tags = try object.optional("tags") {
                for tag in try tags.elements() { _ = try tag.nonEmptyString() }
            }
            let snapshotObject = try object.required("object")
            _ = try CoatyObject(validating: snapshotObject.value, at: snapshotObject.path, nesting: nesting + 1)
        case .user:
            let names = try object.required("names")
            let formatted = try names.optional("formatted")?.nonEmptyString()
            let familyName = try names.optional("familyName")?.string()
            let givenName = try names.optional("givenName")?.string()
            guard (familyName == nil) == (givenName == nil) else {
                throw names.error("familyName and givenName go together")
            }
            guard formatted != nil || familyName != nil else {
                throw names.error("needs formatted or familyName and givenName")
            }
            for key in ["middleName", "honorificPrefix", "honorificSuffix"] {
                _ = try names.optional(key)?.string()
            }
            for key in [
                "displayName", "nickName", "title", "userType", "preferredLanguage", "locale", "timezone", "password",
            ] {
                _ = try object.optional(key)?.string()
            }
            _ = try object.optional("active")?.bool()
        }
    }
}
