/// The twelve Coaty core types. Every object's `coreType` is one of these; its `objectType` is either the core
/// object type (`coaty.<CoreType>`) or an application type such as `com.example.Thermostat`.
public enum CoreType: String, Sendable, Hashable, CaseIterable {
    case coatyObject = "CoatyObject"
    case user = "User"
    case annotation = "Annotation"
    case task = "Task"
    case ioContext = "IoContext"
    case ioNode = "IoNode"
    case ioSource = "IoSource"
    case ioActor = "IoActor"
    case identity = "Identity"
    case log = "Log"
    case location = "Location"
    case snapshot = "Snapshot"

    public static let objectTypePrefix = "coaty."

    /// The object type of objects of exactly this core type: `coaty.IoNode`.
    public var objectType: String { Self.objectTypePrefix + rawValue }

    /// The core type whose core object type is `objectType`, if it is one.
    public init?(coreObjectType objectType: String) {
        guard objectType.hasPrefix(Self.objectTypePrefix),
            let coreType = CoreType(rawValue: String(objectType.dropFirst(Self.objectTypePrefix.count)))
        else { return nil }
        self = coreType
    }
}
