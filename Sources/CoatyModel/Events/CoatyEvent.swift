import CoatyJSON

/// Any event of the Coaty protocol except IoValue and Raw, which carry bare values or bytes.
package enum CoatyEvent: Sendable, Hashable, CoatyEventPayload {
    case advertise(AdvertiseEvent)
    case deadvertise(DeadvertiseEvent)
    case channel(ChannelEvent)
    case associate(AssociateEvent)
    case discover(DiscoverEvent)
    case resolve(ResolveEvent)
    case query(QueryEvent)
    case retrieve(RetrieveEvent)
    case update(UpdateEvent)
    case complete(CompleteEvent)
    case call(CallEvent)
    case returnEvent(ReturnEvent)

    public var eventType: CoatyEventType {
        switch self {
        case .advertise: .advertise
        case .deadvertise: .deadvertise
        case .channel: .channel
        case .associate: .associate
        case .discover: .discover
        case .resolve: .resolve
        case .query: .query
        case .retrieve: .retrieve
        case .update: .update
        case .complete: .complete
        case .call: .call
        case .returnEvent: .returnEvent
        }
    }

    public func addMembers(to payload: inout some JSONMembers) {
        switch self {
        case .advertise(let event): event.addMembers(to: &payload)
        case .deadvertise(let event): event.addMembers(to: &payload)
        case .channel(let event): event.addMembers(to: &payload)
        case .associate(let event): event.addMembers(to: &payload)
        case .discover(let event): event.addMembers(to: &payload)
        case .resolve(let event): event.addMembers(to: &payload)
        case .query(let event): event.addMembers(to: &payload)
        case .retrieve(let event): event.addMembers(to: &payload)
        case .update(let event): event.addMembers(to: &payload)
        case .complete(let event): event.addMembers(to: &payload)
        case .call(let event): event.addMembers(to: &payload)
        case .returnEvent(let event): event.addMembers(to: &payload)
        }
    }

    /// The filter of the event level this event is published under (nil for events without one), and for an
    /// Advertise or Update of an object whose type is not its core type's own the second filter it is published
    /// under as well. Without an array: every event published asks for them.
    public var topicFilter: (first: String?, second: String?) {
        switch self {
        case .advertise(let event):
            let (coreType, objectType) = event.object.topicFilters
            return (coreType, objectType)
        case .update(let event):
            let (coreType, objectType) = event.object.topicFilters
            return (coreType, objectType)
        case .channel(let event): return (event.channelId, nil)
        case .associate(let event): return (event.ioContextName, nil)
        case .call(let event): return (event.operation, nil)
        default: return (nil, nil)
        }
    }

    /// The filters of `topicFilter` that there are; Advertise and Update may have two.
    public var topicFilters: [String?] {
        let (first, second) = topicFilter
        return second.map { [first, $0] } ?? [first]
    }
}

/// An event's payload: a JSON object of a fixed shape, whose members the event adds in the order Coaty JS writes them,
/// once for both forms, the `JSONObject` and (for publishing) its text written straight into bytes.
public protocol CoatyEventPayload: JSONSerializable {
    func addMembers(to payload: inout some JSONMembers)
}

extension CoatyEventPayload {
    public var payload: JSONObject {
        var json = JSONObject()
        addMembers(to: &json)
        return json
    }

    public func write(to writer: inout JSONWriter) {
        var members = JSONMemberWriter(writer)
        addMembers(to: &members)
        writer = members.finish()
    }
}

/// A message received from the broker, classified.
package enum InboundMessage: Sendable, Hashable {
    case event(CoatyTopic, CoatyEvent)
    /// A value on a Coaty IoValue route.
    case ioValue(topic: String, payload: [UInt8])
    /// A topic outside the Coaty protocol: for Raw observers or an external IoValue route.
    case raw(topic: String, payload: [UInt8])
}

/// Why a received message was dropped. Counted and logged by the communication manager, never fatal.
package struct InboundRejection: Error, Sendable, Hashable, CustomStringConvertible {
    public var topic: String
    public var reason: String

    /// The topic as a log line can hold it: control characters escaped, at most 200 characters.
    public var description: String {
        var printable = ""
        for scalar in topic.unicodeScalars.prefix(200) {
            printable += scalar.properties.generalCategory == .control ? scalar.escaped(asASCII: true) : String(scalar)
        }
        if topic.unicodeScalars.count > 200 { printable += "…" }
        return "\(printable): \(reason)"
    }
}

/// Turns received topic and payload into events, validating them as Coaty JS does before it dispatches.
package enum CoatyCodec {
    public static func decode(topic: String, payload: [UInt8]) -> Result<InboundMessage, InboundRejection> {
        guard CoatyTopic.isCoatyTopic(topic) else { return .success(.raw(topic: topic, payload: payload)) }
        let parsed: CoatyTopic
        do {
            parsed = try CoatyTopic(parsing: topic)
        } catch {
            return .failure(InboundRejection(topic: topic, reason: error.description))
        }
        if parsed.eventType == .ioValue {
            return .success(.ioValue(topic: topic, payload: payload))
        }
        let json: JSONValue
        do {
            json = try JSONValue(parsing: payload)
        } catch {
            return .failure(InboundRejection(topic: topic, reason: "payload is not JSON: \(error)"))
        }
        do {
            return .success(.event(parsed, try decodeEvent(parsed, json)))
        } catch {
            return .failure(
                InboundRejection(topic: topic, reason: "invalid \(parsed.eventType.rawValue) payload: \(error)"))
        }
    }

    static func decodeEvent(_ topic: CoatyTopic, _ payload: JSONValue) throws(JSONShapeError) -> CoatyEvent {
        let filter = topic.filter ?? ""
        switch topic.eventType {
        case .advertise:
            let event = try AdvertiseEvent(payload: payload)
            try checkObjectFilter(filter, matches: event.object)
            return .advertise(event)
        case .deadvertise:
            return .deadvertise(try DeadvertiseEvent(payload: payload))
        case .channel:
            return .channel(try ChannelEvent(channelId: filter, payload: payload))
        case .associate:
            return .associate(try AssociateEvent(ioContextName: filter, payload: payload))
        case .discover:
            return .discover(try DiscoverEvent(payload: payload))
        case .resolve:
            return .resolve(try ResolveEvent(payload: payload))
        case .query:
            return .query(try QueryEvent(payload: payload))
        case .retrieve:
            return .retrieve(try RetrieveEvent(payload: payload))
        case .update:
            let event = try UpdateEvent(payload: payload)
            try checkObjectFilter(filter, matches: event.object)
            return .update(event)
        case .complete:
            return .complete(try CompleteEvent(payload: payload))
        case .call:
            return .call(try CallEvent(operation: filter, payload: payload))
        case .returnEvent:
            return .returnEvent(try ReturnEvent(payload: payload))
        case .ioValue:
            preconditionFailure("IoValue payloads are not events")
        }
    }

    /// `ADV:<CoreType>` must carry an object of that core type, `ADV::<objectType>` one of that object type.
    private static func checkObjectFilter(_ filter: String, matches object: CoatyObject) throws(JSONShapeError) {
        if filter.hasPrefix(":") {
            guard object.objectType == filter.dropFirst() else {
                throw JSONShapeError(
                    path: JSONPath([.key("object"), .key("objectType")]),
                    reason: "does not match the topic's object type \(filter.dropFirst())")
            }
        } else {
            guard object.coreType.rawValue == filter else {
                throw JSONShapeError(
                    path: JSONPath([.key("object"), .key("coreType")]),
                    reason: "does not match the topic's core type \(filter)")
            }
        }
    }
}
