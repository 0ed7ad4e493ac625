import CoatyJSON

public enum TaskStatus: Int, Sendable, Hashable, CaseIterable {
    case pending, inProgress, done, blocked, cancelled, request, requestCancelled
}

public enum AnnotationType: Int, Sendable, Hashable, CaseIterable {
    case text, image, audio, video, pdf, webDocumentUrl, liveDataUrl
}

public enum AnnotationStatus: Int, Sendable, Hashable, CaseIterable {
    case storedLocally, storageRequest, published, outdated
}

public enum LogLevel: Int, Sendable, Hashable, CaseIterable {
    case debug = 10, info = 20, warning = 30, error = 40, fatal = 50
}

/// A Coaty `Task` object; named so to stay clear of Swift concurrency's `Task`.
public struct CoatyTask: CoatyObjectConvertible {
    public static var coreType: CoreType { .task }
    public let object: CoatyObject

    public init(_ object: CoatyObject) throws(JSONShapeError) {
        try Self.checkType(of: object)
        self.object = object
    }

    public init(
        objectId: String = CoatyUUID.random(), name: String, creatorId: String,
        creationTimestamp: Double = CoatyTimestamp.nowMilliseconds(), status: TaskStatus, objectType: String? = nil
    ) {
        var json = CoatyObject(coreType: .task, objectType: objectType, objectId: objectId, name: name).json
        json["creatorId"] = .string(creatorId)
        json["creationTimestamp"] = .number(creationTimestamp)
        json["status"] = .number(Double(status.rawValue))
        object = CoatyObject(unchecked: json)
    }

    public var creatorId: String { object["creatorId"]?.stringValue ?? "" }
    public var creationTimestamp: Double { object["creationTimestamp"]?.numberValue ?? 0 }
    public var status: TaskStatus { object["status"]?.intValue.flatMap(TaskStatus.init(rawValue:)) ?? .pending }
}

public struct Annotation: CoatyObjectConvertible {
    public static var coreType: CoreType { .annotation }
    public let object: CoatyObject

    public init(_ object: CoatyObject) throws(JSONShapeError) {
        try Self.checkType(of: object)
        self.object = object
    }

    public init(
        objectId: String = CoatyUUID.random(), name: String, type: AnnotationType, creatorId: String,
        creationTimestamp: Double = CoatyTimestamp.nowMilliseconds(), status: AnnotationStatus,
        objectType: String? = nil
    ) {
        var json = CoatyObject(coreType: .annotation, objectType: objectType, objectId: objectId, name: name).json
        json["type"] = .number(Double(type.rawValue))
        json["creatorId"] = .string(creatorId)
        json["creationTimestamp"] = .number(creationTimestamp)
        json["status"] = .number(Double(status.rawValue))
        object = CoatyObject(unchecked: json)
    }

    public var type: AnnotationType { object["type"]?.intValue.flatMap(AnnotationType.init(rawValue:)) ?? .text }
    public var status: AnnotationStatus {
        object["status"]?.intValue.flatMap(AnnotationStatus.init(rawValue:)) ?? .storedLocally
    }
}

public struct Log: CoatyObjectConvertible {
    public static var coreType: CoreType { .log }
    public let object: CoatyObject

    public init(_ object: CoatyObject) throws(JSONShapeError) {
        try Self.checkType(of: object)
        self.object = object
    }

    public init(
        objectId: String = CoatyUUID.random(), name: String = "Log", level: LogLevel, message: String,
        date: String = CoatyTimestamp.localISOString(milliseconds: CoatyTimestamp.nowMilliseconds()),
        tags: [String]? = nil
    ) {
        var json = CoatyObject(coreType: .log, objectId: objectId, name: name).json
        json["logLevel"] = .number(Double(level.rawValue))
        json["logMessage"] = .string(message)
        json["logDate"] = .string(date)
        json.set("logTags", ifPresent: tags.map { .array($0.map(JSONValue.string)) })
        object = CoatyObject(unchecked: json)
    }

    public var level: LogLevel { object["logLevel"]?.intValue.flatMap(LogLevel.init(rawValue:)) ?? .info }
    public var message: String { object["logMessage"]?.stringValue ?? "" }
    public var date: String { object["logDate"]?.stringValue ?? "" }
}

public struct Location: CoatyObjectConvertible {
    public static var coreType: CoreType { .location }
    public let object: CoatyObject

    public init(_ object: CoatyObject) throws(JSONShapeError) {
        try Self.checkType(of: object)
        self.object = object
    }

    public init(
        objectId: String = CoatyUUID.random(), name: String, latitude: Double, longitude: Double, accuracy: Double,
        timestamp: Double = CoatyTimestamp.nowMilliseconds()
    ) {
        var json = CoatyObject(coreType: .location, objectId: objectId, name: name).json
        json["geoLocation"] = [
            "coords": ["latitude": .number(latitude), "longitude": .number(longitude), "accuracy": .number(accuracy)],
            "timestamp": .number(timestamp),
        ]
        object = CoatyObject(unchecked: json)
    }

    public var latitude: Double { object["geoLocation"]?["coords"]?["latitude"]?.numberValue ?? 0 }
    public var longitude: Double { object["geoLocation"]?["coords"]?["longitude"]?.numberValue ?? 0 }
}

public struct Snapshot: CoatyObjectConvertible {
    public static var coreType: CoreType { .snapshot }
    public let object: CoatyObject

    public init(_ object: CoatyObject) throws(JSONShapeError) {
        try Self.checkType(of: object)
        self.object = object
    }

    /// A snapshot of `snapshotOf` taken by `creatorId`; its parent is the object it shows.
    public init(
        objectId: String = CoatyUUID.random(), of snapshotOf: CoatyObject, creatorId: String,
        creationTimestamp: Double = CoatyTimestamp.nowMilliseconds(), tags: [String]? = nil
    ) {
        var json = CoatyObject(coreType: .snapshot, objectId: objectId, name: "Snapshot").json
        json["parentObjectId"] = .string(snapshotOf.objectId)
        json["creationTimestamp"] = .number(creationTimestamp)
        json["creatorId"] = .string(creatorId)
        json.set("tags", ifPresent: tags.map { .array($0.map(JSONValue.string)) })
        json["object"] = snapshotOf.jsonValue
        object = CoatyObject(unchecked: json)
    }

    public var snapshotObject: CoatyObject? {
        object["object"].flatMap { try? CoatyObject(validating: $0) }
    }
}

public struct User: CoatyObjectConvertible {
    public static var coreType: CoreType { .user }
    public let object: CoatyObject

    public init(_ object: CoatyObject) throws(JSONShapeError) {
        try Self.checkType(of: object)
        self.object = object
    }

    public init(objectId: String = CoatyUUID.random(), name: String, formattedName: String) {
        var json = CoatyObject(coreType: .user, objectId: objectId, name: name).json
        json["names"] = ["formatted": .string(formattedName)]
        object = CoatyObject(unchecked: json)
    }

    public var formattedName: String? { object["names"]?["formatted"]?.stringValue }
}
