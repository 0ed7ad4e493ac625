import CoatyJSON

/// A Swift view of Coaty objects of one core type or one application object type.
///
/// The core views (`Identity`, `IoSource`, `Task`, ...) accept every object of their core type. An application
/// registers its own types in a `CoatyObjectRegistry`; objects of unregistered types are viewed as their core type
/// and keep all their properties.
public protocol CoatyObjectConvertible: Sendable, Hashable {
    static var coreType: CoreType { get }
    /// The object type this Swift type stands for, or nil for a core view that accepts all object types.
    static var objectType: String? { get }
    var object: CoatyObject { get }
    /// Checks what this type requires beyond the core type's shape (already validated in `object`).
    init(_ object: CoatyObject) throws(JSONShapeError)
}

extension CoatyObjectConvertible {
    public static var objectType: String? { nil }

    public var objectId: String { object.objectId }
    public var name: String { object.name }
    public var jsonValue: JSONValue { object.jsonValue }

    /// Validates received JSON as an object of this type.
    public init(validating value: JSONValue, at path: JSONPath = .root) throws(JSONShapeError) {
        try self.init(CoatyObject(validating: value, at: path))
    }

    static func checkType(of object: CoatyObject) throws(JSONShapeError) {
        guard object.coreType == coreType else {
            throw JSONShapeError(
                path: JSONPath([.key("coreType")]),
                reason: "expected core type \(coreType.rawValue), found \(object.coreType.rawValue)")
        }
        if let objectType, object.objectType != objectType {
            throw JSONShapeError(
                path: JSONPath([.key("objectType")]),
                reason: "expected object type \(objectType), found \(object.objectType)")
        }
    }
}

extension CoatyObject: CoatyObjectConvertible {
    public static var coreType: CoreType { .coatyObject }
    public var object: CoatyObject { self }

    public init(_ object: CoatyObject) {
        self = object
    }
}

/// Maps application object types to their Swift types.
public struct CoatyObjectRegistry: Sendable {
    private var types: [String: any CoatyObjectConvertible.Type] = [:]

    public init() {}

    public mutating func register<T: CoatyObjectConvertible>(_ type: T.Type) {
        guard let objectType = type.objectType else {
            preconditionFailure("\(type) is a core view; only types with an objectType can be registered")
        }
        types[objectType] = type
    }

    public func isRegistered(objectType: String) -> Bool {
        types[objectType] != nil
    }

    /// The registered type's view of the object, or the view of its core type when its object type is not
    /// registered. Either way nothing of the object is lost.
    public func view(of object: CoatyObject) throws(JSONShapeError) -> any CoatyObjectConvertible {
        if let type = types[object.objectType] {
            return try type.init(object)
        }
        return try Self.coreView(of: object)
    }

    static func coreView(of object: CoatyObject) throws(JSONShapeError) -> any CoatyObjectConvertible {
        switch object.coreType {
        case .coatyObject: object
        case .user: try User(object)
        case .annotation: try Annotation(object)
        case .task: try CoatyTask(object)
        case .ioContext: try IoContext(object)
        case .ioNode: try IoNode(object)
        case .ioSource: try IoSource(object)
        case .ioActor: try IoActor(object)
        case .identity: try Identity(object)
        case .log: try Log(object)
        case .location: try Location(object)
        case .snapshot: try Snapshot(object)
        }
    }
}
