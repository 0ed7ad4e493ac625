import CoatyJSON

/// How an IoSource copes with a router's update rate that is slower than its own publication rate.
public enum IoSourceBackpressureStrategy: Int, Sendable, Hashable, CaseIterable {
    /// `none` without an update rate, `sample` with one.
    case `default` = 0
    /// Every value is published at once; the rate is ignored.
    case none = 1
    /// The latest value is published once per rate interval.
    case sample = 2
    /// A value is published only after a rate interval passed with no newer value (a debounce).
    case throttle = 3
}

/// Behaviour shared by IO sources and actors.
public protocol IoPoint: CoatyObjectConvertible {}

extension IoPoint {
    /// The type of the values, e.g. `coaty-edge.Temperature[Celsius]`. A source and an actor are compatible when
    /// this and `useRawIoValues` are equal.
    public var valueType: String { object["valueType"]?.stringValue ?? "" }
    /// Milliseconds: for a source the fastest rate it can be drained at, for an actor the rate it wants.
    public var updateRate: Double? { object["updateRate"]?.numberValue }
    public var useRawIoValues: Bool { object["useRawIoValues"]?.boolValue ?? false }
    /// A topic outside Coaty that this point publishes on (source) or that is associated with it.
    public var externalRoute: String? { object["externalRoute"]?.stringValue }

    public func isCompatible(with other: some IoPoint) -> Bool {
        valueType == other.valueType && useRawIoValues == other.useRawIoValues
    }
}

func ioPointJSON(
    coreType: CoreType, objectType: String?, objectId: String, name: String, valueType: String,
    updateStrategy: IoSourceBackpressureStrategy?, updateRate: Double?, useRawIoValues: Bool?, externalRoute: String?
) -> JSONObject {
    var json = CoatyObject(coreType: coreType, objectType: objectType, objectId: objectId, name: name).json
    json["valueType"] = .string(valueType)
    json.set("updateStrategy", ifPresent: updateStrategy.map { .number(Double($0.rawValue)) })
    json.set("updateRate", ifPresent: updateRate.map(JSONValue.number))
    json.set("useRawIoValues", ifPresent: useRawIoValues.map(JSONValue.bool))
    json.set("externalRoute", ifPresent: externalRoute.map(JSONValue.string))
    return json
}

public struct IoSource: IoPoint {
    public static var coreType: CoreType { .ioSource }
    public let object: CoatyObject

    public init(_ object: CoatyObject) throws(JSONShapeError) {
        try Self.checkType(of: object)
        self.object = object
    }

    public init(
        objectId: String = CoatyUUID.random(), name: String, valueType: String,
        updateStrategy: IoSourceBackpressureStrategy? = nil, updateRate: Double? = nil, useRawIoValues: Bool? = nil,
        externalRoute: String? = nil, objectType: String? = nil
    ) {
        object = CoatyObject(
            unchecked: ioPointJSON(
                coreType: .ioSource, objectType: objectType, objectId: objectId, name: name, valueType: valueType,
                updateStrategy: updateStrategy, updateRate: updateRate, useRawIoValues: useRawIoValues,
                externalRoute: externalRoute))
    }

    public var updateStrategy: IoSourceBackpressureStrategy {
        object["updateStrategy"]?.intValue.flatMap(IoSourceBackpressureStrategy.init(rawValue:)) ?? .default
    }
}

public struct IoActor: IoPoint {
    public static var coreType: CoreType { .ioActor }
    public let object: CoatyObject

    public init(_ object: CoatyObject) throws(JSONShapeError) {
        try Self.checkType(of: object)
        self.object = object
    }

    public init(
        objectId: String = CoatyUUID.random(), name: String, valueType: String, updateRate: Double? = nil,
        useRawIoValues: Bool? = nil, externalRoute: String? = nil, objectType: String? = nil
    ) {
        object = CoatyObject(
            unchecked: ioPointJSON(
                coreType: .ioActor, objectType: objectType, objectId: objectId, name: name, valueType: valueType,
                updateStrategy: nil, updateRate: updateRate, useRawIoValues: useRawIoValues,
                externalRoute: externalRoute))
    }
}

/// The scope of IO routing; its name is the context name that IO nodes and Associate topics carry.
/// Applications add their own properties (an `operatingState`, say), which rules can read.
public struct IoContext: CoatyObjectConvertible {
    public static var coreType: CoreType { .ioContext }
    public private(set) var object: CoatyObject

    public init(_ object: CoatyObject) throws(JSONShapeError) {
        try Self.checkType(of: object)
        self.object = object
    }

    public init(objectId: String = CoatyUUID.random(), name: String, objectType: String? = nil) {
        object = CoatyObject(coreType: .ioContext, objectType: objectType, objectId: objectId, name: name)
    }

    public subscript(property: String) -> JSONValue? {
        get { object[property] }
        set { object[property] = newValue }
    }

    public var parentObjectId: String? {
        get { object.parentObjectId }
        set { object.parentObjectId = newValue }
    }
}

/// The IO sources and actors one agent contributes to one IO context, with characteristics routers can use.
public struct IoNode: CoatyObjectConvertible {
    public static var coreType: CoreType { .ioNode }
    public let object: CoatyObject

    public init(_ object: CoatyObject) throws(JSONShapeError) {
        try Self.checkType(of: object)
        self.object = object
    }

    /// A node as Coaty JS builds it from `ioContextNodes`: both arrays always present.
    public init(
        contextName: String, objectId: String = CoatyUUID.random(), parentObjectId: String, ioSources: [IoSource],
        ioActors: [IoActor], characteristics: JSONObject? = nil
    ) {
        var json = CoatyObject(coreType: .ioNode, objectId: objectId, name: contextName).json
        json["parentObjectId"] = .string(parentObjectId)
        json["ioSources"] = .array(ioSources.map(\.jsonValue))
        json["ioActors"] = .array(ioActors.map(\.jsonValue))
        json.set("characteristics", ifPresent: characteristics.map(JSONValue.object))
        object = CoatyObject(unchecked: json)
    }

    /// The IO context this node belongs to.
    public var contextName: String { object.name }

    public var ioSources: [IoSource] {
        (object["ioSources"]?.arrayValue ?? []).compactMap { try? IoSource(validating: $0) }
    }

    public var ioActors: [IoActor] {
        (object["ioActors"]?.arrayValue ?? []).compactMap { try? IoActor(validating: $0) }
    }

    public var characteristics: JSONObject? { object["characteristics"]?.objectValue }
}
