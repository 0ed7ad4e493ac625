import CoatyBrokerDiscovery
import CoatyJSON
import CoatyMQTT
import CoatyModel

public enum OperatingState: Sendable, Hashable {
    case stopped
    case started
}

/// Whether the agent can talk to the broker now. A started manager goes offline when the connection drops and
/// reports its reconnection attempts until it is online again; a stopped manager is offline.
public enum CommunicationState: Sendable, Hashable {
    case offline
    case reconnecting(attempt: Int)
    case online

    public var isOnline: Bool { self == .online }
}

/// An event received from another agent (or from this one: Coaty has no echo suppression).
public struct ReceivedEvent<Event: Sendable>: Sendable {
    /// The identity of the agent that published the event.
    public let sourceId: String
    public let namespace: String
    public let event: Event
}

/// A request received from an agent; answer it with `respond`, as often as you like.
public struct ReceivedRequest<Request: Sendable, Response: Sendable>: Sendable {
    public let sourceId: String
    public let namespace: String
    public let correlationId: String
    public let event: Request
    /// The manager that received the request, held strongly: a responder closure that held it weakly was an
    /// allocation and a weak reference with every request. A request kept to be answered later keeps it alive.
    let manager: CommunicationManager
    /// The response as the event to publish; fails for a response that does not answer the request.
    let makeEvent: @Sendable (Response) throws(CoatyError) -> CoatyEvent

    /// Publishes a response in this agent's namespace, queued while offline; on the caller's executor, as the one-way
    /// publications (see `publishChannel`).
    nonisolated(nonsending) public func respond(_ response: Response) async throws(CoatyError) {
        manager.publish(try makeEvent(response), correlationId: correlationId)
    }
}

public typealias DiscoverRequest = ReceivedRequest<DiscoverEvent, ResolveEvent>
public typealias UpdateRequest = ReceivedRequest<UpdateEvent, CompleteEvent>
public typealias QueryRequest = ReceivedRequest<QueryEvent, RetrieveEvent>
public typealias CallRequest = ReceivedRequest<CallEvent, ReturnEvent>

/// A value travelling on an IO route: JSON, or raw bytes for points with `useRawIoValues`.
public enum IoValue: Sendable, Hashable {
    case json(JSONValue)
    case raw([UInt8])

    public var payload: [UInt8] {
        switch self {
        case .json(let value): value.serializedBytes()
        case .raw(let bytes): bytes
        }
    }
}

public enum CoatyError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A namespace, channel id, operation, context name or object type that cannot go into a topic.
    case invalidName(String)
    /// A Raw topic that is invalid or belongs to the Coaty protocol.
    case invalidRawTopic(String)
    /// An IO route to monitor that is not a topic one can publish on (empty, or with wildcards).
    case invalidIoRoute(String)
    /// A value whose form does not match the source: raw bytes for a JSON source or the reverse.
    case ioValueFormatMismatch(sourceId: String)
    case unknownIoPoint(String)

    public var description: String {
        switch self {
        case .invalidName(let name): "invalid name \"\(name)\": must be non-empty without NUL, '+', '#' or '/'"
        case .invalidRawTopic(let topic):
            "invalid Raw topic \"\(topic)\": must be a valid MQTT topic not starting with 'coaty/'"
        case .invalidIoRoute(let route): "invalid IO route \"\(route)\": must be an MQTT topic without wildcards"
        case .ioValueFormatMismatch(let sourceId): "IO value format does not match useRawIoValues of source \(sourceId)"
        case .unknownIoPoint(let id): "no IO source or actor \(id) in this agent's IO nodes"
        }
    }
}

/// How to reach the broker and how to take part in the protocol.
public struct CommunicationOptions: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var username: String?
    public var password: String?
    public var tls: MQTTTLSOptions?
    public var keepAlive: Duration
    public var reconnect: MQTTReconnectPolicy
    /// Agents only see events of their namespace, unless they enable cross-namespacing.
    public var namespace: String
    /// Observe events of every namespace (publications stay in the own namespace).
    public var shouldEnableCrossNamespacing: Bool
    /// Bytes; an inbound message with a larger payload is dropped unread, counted and logged.
    public var maximumInboundPayload: Int
    /// What is kept of the publications made while offline, and what gives way beyond it.
    public var offlineQueue: OfflineQueueLimits
    /// Zero-loss delivery of IO values with other coaty-edge agents that opt in too (see `ZeroLossOptions`); nil:
    /// Coaty's delivery only.
    public var zeroLoss: ZeroLossOptions?
    /// Find the broker by mDNS (`"brokerUrl": "mdns"` or `"mdns:<name>"`): the DNS-SD instance name of
    /// `_coaty-mqtt._tcp` to look for, in place of `host` and `port`.
    public var mdnsServiceName: String?
    /// Requests (Discover, Query, Update, Call) whose responses are observed at the same time, at most: each holds
    /// a response subscription and its observer. One more is refused (its responses end at once), counted in
    /// `coaty_edge_requests_refused_total` and logged.
    public var maximumPendingRequests: Int

    /// The default of `maximumPendingRequests`.
    public static let defaultMaximumPendingRequests = 10_000

    /// The default of `maximumInboundPayload`: 256 KiB, the `message_size_limit` of the deploy broker. Coaty events
    /// and IO values are far smaller; a shared object's whole data (at most 128 KiB by default) fits with room.
    public static let defaultMaximumInboundPayload = 256 * 1024

    public init(
        host: String = "127.0.0.1", port: Int = 1883, username: String? = nil, password: String? = nil,
        tls: MQTTTLSOptions? = nil, keepAlive: Duration = .seconds(60),
        reconnect: MQTTReconnectPolicy = MQTTReconnectPolicy(),
        namespace: String = CoatyTopic.defaultNamespace, shouldEnableCrossNamespacing: Bool = false,
        maximumInboundPayload: Int = CommunicationOptions.defaultMaximumInboundPayload,
        offlineQueue: OfflineQueueLimits = OfflineQueueLimits(), zeroLoss: ZeroLossOptions? = nil,
        maximumPendingRequests: Int = CommunicationOptions.defaultMaximumPendingRequests
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.tls = tls
        self.keepAlive = keepAlive
        self.reconnect = reconnect
        self.namespace = namespace.isEmpty ? CoatyTopic.defaultNamespace : namespace
        self.shouldEnableCrossNamespacing = shouldEnableCrossNamespacing
        self.maximumInboundPayload = maximumInboundPayload
        self.offlineQueue = offlineQueue
        self.zeroLoss = zeroLoss
        self.maximumPendingRequests = maximumPendingRequests
    }
}

extension CommunicationOptions {
    /// The broker as configured, for messages: `host:port`, or the mDNS service looked for.
    public var brokerDescription: String {
        mdnsServiceName.map { "mDNS \"\($0)\" (\(MDNSBrokerDiscovery.serviceType))" } ?? "\(host):\(port)"
    }
}

/// Counters of what the manager did, for logs and metrics.
public struct CommunicationStatistics: Sendable, Hashable {
    public var messagesReceived = 0
    public var messagesPublished = 0
    /// Messages from other agents that were malformed, invalid or too large, dropped.
    public var messagesRejected = 0
    /// Of `messagesRejected`, those whose payload was larger than `maximumInboundPayload`.
    public var messagesOversized = 0
    /// Responses that do not answer their request (wrong type or object), dropped as Coaty JS does.
    public var responsesRejected = 0
    /// Requests not published because `maximumPendingRequests` were waiting for responses already.
    public var requestsRefused = 0
    public var ioValuesPublished = 0
    public var ioValuesReceived = 0
    /// Values of own sources dropped for any reason (`CommunicationManager.droppedValues` tells which).
    public var ioValuesDropped = 0
    public var reconnects = 0
}
