import CoatyJSON

/// Something `observe` reports: a value on a route, an association made or dropped, an agent joining or leaving,
/// a change of an agent's device status, or of an IO context.
public enum ObserveEvent: Sendable, Hashable {
    case value(ValueSeen)
    case associated(AssociationChange)
    case disassociated(AssociationChange)
    case agentJoined(AgentSeen)
    /// The agent's IO nodes changed (they usually arrive just after its identity).
    case agentUpdated(AgentSeen)
    case agentLeft(AgentSeen)
    case deviceStatus(DeviceStatusSeen)
    case context(ContextSeen)

    public struct ValueSeen: Sendable, Hashable {
        /// Milliseconds since 1970.
        public var time: Int64
        public var route: String
        public var sourceId: String
        public var source: ObserveModel.SourceInfo?
        public var value: ObservedValue
        /// Values per second of this source, once known.
        public var rate: Double?
    }

    public struct AssociationChange: Sendable, Hashable {
        public var time: Int64
        public var context: String
        public var routerId: String
        public var sourceId: String
        public var sourceName: String?
        public var actorId: String
        public var actorName: String?
        public var route: String?
        /// Milliseconds.
        public var updateRate: Double?
        /// The rule that matched, when a coaty-edge router told it.
        public var rule: String?
    }

    public struct AgentSeen: Sendable, Hashable {
        public var time: Int64
        public var agentId: String
        public var name: String
        public var namespace: String
        public var sources: [ObserveModel.SourceInfo]
        public var actors: [ObserveModel.ActorInfo]
    }

    public struct DeviceStatusSeen: Sendable, Hashable {
        public var time: Int64
        public var agentId: String
        public var agentName: String?
        /// `[{label, driver, ioPoints, state, error?}]` as the agent advertised them.
        public var devices: [JSONValue]
    }

    public struct ContextSeen: Sendable, Hashable {
        public var time: Int64
        public var name: String
        public var objectId: String
        /// 0 until an Update changed the context.
        public var version: Int
        /// The whole IoContext object.
        public var object: JSONObject
    }

    public var time: Int64 {
        switch self {
        case .value(let event): event.time
        case .associated(let event), .disassociated(let event): event.time
        case .agentJoined(let event), .agentUpdated(let event), .agentLeft(let event): event.time
        case .deviceStatus(let event): event.time
        case .context(let event): event.time
        }
    }

    public var kind: String {
        switch self {
        case .value: "value"
        case .associated: "associated"
        case .disassociated: "disassociated"
        case .agentJoined: "agentJoined"
        case .agentUpdated: "agentUpdated"
        case .agentLeft: "agentLeft"
        case .deviceStatus: "deviceStatus"
        case .context: "context"
        }
    }

    /// The event as one JSON object, for `observe --json`: `event`, `time` (ms since 1970), ids and names.
    public var json: JSONObject {
        var json: JSONObject = ["event": .string(kind), "time": .number(Double(time))]
        func add(_ key: String, _ value: JSONValue?) { json.set(key, ifPresent: value) }
        switch self {
        case .value(let event):
            add("route", .string(event.route))
            add("sourceId", .string(event.sourceId))
            add("sourceName", event.source.map { .string($0.name) })
            add("valueType", event.source.map { .string($0.valueType) })
            add("agentId", event.source.map { .string($0.agentId) })
            add("agentName", event.source.map { .string($0.agentName) })
            add("context", event.source.map { .string($0.context) })
            for (key, value) in event.value.jsonMembers { add(key, value) }
            add("rate", event.rate.map { .number(($0 * 100).rounded() / 100) })
        case .associated(let event), .disassociated(let event):
            add("context", .string(event.context))
            add("routerId", .string(event.routerId))
            add("sourceId", .string(event.sourceId))
            add("sourceName", event.sourceName.map(JSONValue.string))
            add("actorId", .string(event.actorId))
            add("actorName", event.actorName.map(JSONValue.string))
            add("route", event.route.map(JSONValue.string))
            add("updateRate", event.updateRate.map(JSONValue.number))
            add("rule", event.rule.map(JSONValue.string))
        case .agentJoined(let event), .agentUpdated(let event), .agentLeft(let event):
            add("agentId", .string(event.agentId))
            add("name", .string(event.name))
            add("namespace", .string(event.namespace))
            add("ioSources", .array(event.sources.map(\.json)))
            add("ioActors", .array(event.actors.map(\.json)))
        case .deviceStatus(let event):
            add("agentId", .string(event.agentId))
            add("agentName", event.agentName.map(JSONValue.string))
            add("devices", .array(event.devices))
        case .context(let event):
            add("context", .string(event.name))
            add("objectId", .string(event.objectId))
            add("contextVersion", .number(Double(event.version)))
            add("object", .object(event.object))
        }
        return json
    }

    /// The event as one line of text, for `observe` into a pipe or file.
    public var line: String {
        let time = ClockTime.local(time)
        switch self {
        case .value(let event):
            let name = event.source.map { "\($0.name) (\($0.agentName))" } ?? event.sourceId
            let rate = event.rate.map { ", " + RateFormat.perSecond($0) } ?? ""
            return "\(time) value \(name) = \(event.value.display())\(rate)"
        case .associated(let event):
            let rate = event.updateRate.map { ", every \(Self.number($0)) ms" } ?? ""
            let rule = event.rule.map { " by rule \($0)" } ?? ""
            return
                "\(time) associated \(event.sourceName ?? event.sourceId) -> \(event.actorName ?? event.actorId) in \(event.context)"
                + "\(rule) on \(event.route ?? "-")\(rate)"
        case .disassociated(let event):
            return
                "\(time) disassociated \(event.sourceName ?? event.sourceId) -> \(event.actorName ?? event.actorId) in \(event.context)"
        case .agentJoined(let event):
            return "\(time) agent joined \(event.name) (\(event.agentId)) in namespace \(event.namespace): "
                + "\(event.sources.count) sources, \(event.actors.count) actors"
        case .agentUpdated(let event):
            return
                "\(time) agent \(event.name) (\(event.agentId)) now has \(event.sources.count) sources, \(event.actors.count) actors"
        case .agentLeft(let event):
            return "\(time) agent left \(event.name) (\(event.agentId))"
        case .deviceStatus(let event):
            let devices = event.devices.map(DeviceStatusFormat.summary).joined(separator: "; ")
            return "\(time) devices of \(event.agentName ?? event.agentId): \(devices)"
        case .context(let event):
            return
                "\(time) context \(event.name) version \(event.version): \(ContextFormat.properties(of: event.object))"
        }
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}

/// One device of a DeviceStatus, in words: `BME280 0x76 on /dev/i2c-1 ok`, `... failing: no answer`.
enum DeviceStatusFormat {
    static func summary(_ device: JSONValue) -> String {
        let label = device["label"]?.stringValue ?? "?"
        let state = device["state"]?.stringValue ?? "?"
        let error = device["error"]?.stringValue.map { ": \($0)" } ?? ""
        return "\(label) \(state)\(error)"
    }
}

/// The application's members of an IoContext (not the core members), as `key=value` pairs.
enum ContextFormat {
    static let coreMembers: Set<String> = [
        "coreType", "objectType", "objectId", "name", "parentObjectId", "contextVersion",
    ]

    static func properties(of object: JSONObject) -> String {
        let members = object.members.filter { !coreMembers.contains($0.key) }
        guard !members.isEmpty else { return "no properties" }
        return members.map { "\($0.key)=\($0.value.serialized())" }.joined(separator: " ")
    }
}

enum RateFormat {
    static func perSecond(_ rate: Double) -> String {
        rate >= 10 ? "\(Int(rate.rounded()))/s" : "\((rate * 100).rounded() / 100)/s"
    }
}
