/// An MQTT 3.1.1 client connection as the communication manager needs it: QoS 0 only, clean session, one will.
///
/// Inbound messages go to a handler called on the transport's network thread, so that an event reaches its
/// observer with a single thread hop, as in a bare client, or none when the observer runs on the connection's
/// `ConnectionExecutor`. A message whose payload is larger than `MQTTConnectOptions.maximumInboundPayload` is not
/// handed on: the handler learns only its topic and size. Connection changes arrive in order on `connectionEvents`.
public protocol MQTTTransport: AnyObject, Sendable {
    /// Connection changes, in order. There is one consumer.
    var connectionEvents: AsyncStream<MQTTConnectionEvent> { get }

    /// Starts connecting in the background (reconnecting by the options' policy) and returns at once.
    /// `handler` receives every inbound message (or, for one too large, its topic and size) on the network thread;
    /// it must not block. A transport with a
    /// network thread of its own runs `executor`'s jobs on it until `disconnect`; one without leaves them to the
    /// executor's fallback.
    func connect(
        _ options: MQTTConnectOptions, executor: ConnectionExecutor?,
        onMessage handler: @escaping @Sendable (MQTTInbound) -> Void
    ) throws(MQTTError)

    /// Sends at QoS 0. Fails with `.notConnected` while offline: the caller queues.
    func publish(_ message: MQTTMessage) throws(MQTTError)

    /// Runs `body`, which publishes several messages, so that they leave together where the transport can (in one
    /// TCP segment instead of one each); `body` must not block or wait. Publishing one by one is just as correct.
    func publishingTogether<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T

    func subscribe(_ topicFilter: String) throws(MQTTError)
    func unsubscribe(_ topicFilter: String) throws(MQTTError)
    /// Several filters at once: with libmosquitto, one SUBSCRIBE (or UNSUBSCRIBE) packet and one acknowledgement.
    func subscribe(_ topicFilters: [String]) throws(MQTTError)
    func unsubscribe(_ topicFilters: [String]) throws(MQTTError)

    /// Ends the connection and the network thread. `.clean` sends DISCONNECT after everything already published,
    /// so the broker drops the will; `.abrupt` closes the socket so the broker publishes the will.
    func disconnect(_ mode: MQTTDisconnectMode) async
}

extension MQTTTransport {
    /// For transports that send each message as it comes.
    public func publishingTogether<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        try body()
    }

    /// One filter after the other, for transports without a batch of their own.
    public func subscribe(_ topicFilters: [String]) throws(MQTTError) {
        for filter in topicFilters { try subscribe(filter) }
    }

    public func unsubscribe(_ topicFilters: [String]) throws(MQTTError) {
        for filter in topicFilters { try unsubscribe(filter) }
    }
}

public enum MQTTDisconnectMode: Sendable {
    case clean
    case abrupt
}

public struct MQTTMessage: Sendable, Hashable {
    public var topic: String
    public var payload: [UInt8]
    public var retain: Bool

    public init(topic: String, payload: [UInt8], retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.retain = retain
    }
}

/// What a transport hands on from the broker.
public enum MQTTInbound: Sendable, Hashable {
    case message(MQTTMessage)
    /// A message whose payload of `size` bytes is larger than the connection's `maximumInboundPayload`, dropped
    /// before its payload was copied.
    case oversized(topic: String, size: Int)
}

public enum MQTTConnectionEvent: Sendable, Equatable {
    /// The broker accepted the connection (initially or after a reconnect).
    case connected
    /// The connection attempt failed or an established connection was lost.
    case connectionLost(reason: String)
    /// The next attempt is scheduled after `delay`; `attempt` counts from 1 since the last successful connect.
    case reconnecting(attempt: Int, delay: Duration)
    /// The maximum number of attempts was used up; the transport stays offline.
    case gaveUp(attempts: Int)
    /// Publications that were handed to the connection but not written to its socket when it ended (QoS 0: they are
    /// gone), in the order they were published; before the `connectionLost` of that connection.
    case unwritten([MQTTMessage])
    /// `disconnect` finished.
    case disconnected
}

public struct MQTTConnectOptions: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var clientId: String
    public var keepAlive: Duration
    public var username: String?
    public var password: String?
    public var tls: MQTTTLSOptions?
    public var will: MQTTMessage?
    public var reconnect: MQTTReconnectPolicy
    /// Bytes; larger inbound payloads are dropped (and reported as `MQTTInbound.oversized`). The communication
    /// manager passes its own, smaller default.
    public var maximumInboundPayload: Int
    /// Where the broker is when it is found at run time (mDNS): asked before every connection attempt, in place of
    /// `host` and `port`.
    public var locator: MQTTBrokerLocator?

    /// The largest payload MQTT can carry: what its remaining length can encode.
    public static let maximumPayload = 268_435_455

    public init(
        host: String, port: Int = 1883, clientId: String, keepAlive: Duration = .seconds(60),
        username: String? = nil, password: String? = nil, tls: MQTTTLSOptions? = nil, will: MQTTMessage? = nil,
        reconnect: MQTTReconnectPolicy = MQTTReconnectPolicy(),
        maximumInboundPayload: Int = MQTTConnectOptions.maximumPayload
    ) {
        self.host = host
        self.port = port
        self.clientId = clientId
        self.keepAlive = keepAlive
        self.username = username
        self.password = password
        self.tls = tls
        self.will = will
        self.reconnect = reconnect
        self.maximumInboundPayload = maximumInboundPayload
    }
}

/// A broker found at run time, such as by mDNS: `current()` says where it is now, or why none is known. Asked before
/// every connection attempt, so that a connection lost to a broker that went away goes to the one found next.
public struct MQTTBrokerLocator: Sendable, Equatable, CustomStringConvertible {
    public enum Lookup: Sendable, Equatable {
        case found(host: String, port: Int)
        /// No broker now; the reason becomes the failed attempt's.
        case none(reason: String)
    }

    /// What is looked for, for logs: `mDNS service "Coaty MQTT Broker" (_coaty-mqtt._tcp)`.
    public let description: String
    private let identity: ObjectIdentifier
    private let lookup: @Sendable () -> Lookup

    /// `owner` identifies the locator (two are equal when their owners are the same object).
    public init(_ description: String, owner: AnyObject, lookup: @escaping @Sendable () -> Lookup) {
        self.description = description
        self.identity = ObjectIdentifier(owner)
        self.lookup = lookup
    }

    public func current() -> Lookup { lookup() }

    public static func == (left: MQTTBrokerLocator, right: MQTTBrokerLocator) -> Bool {
        left.identity == right.identity
    }
}

public struct MQTTTLSOptions: Sendable, Equatable {
    /// PEM file of the certificate authority that signed the broker's certificate.
    public var caFile: String
    /// PEM client certificate and key, for brokers that require client authentication.
    public var certFile: String?
    public var keyFile: String?
    /// Skips the host name check of the broker certificate (for brokers addressed by IP). Chain validation stays.
    public var allowsHostnameMismatch: Bool

    public init(caFile: String, certFile: String? = nil, keyFile: String? = nil, allowsHostnameMismatch: Bool = false) {
        self.caFile = caFile
        self.certFile = certFile
        self.keyFile = keyFile
        self.allowsHostnameMismatch = allowsHostnameMismatch
    }
}

/// Backoff between connection attempts with full jitter and a low ceiling: the delay before an attempt is drawn
/// uniformly from `minimumDelay` up to a ceiling that starts at `minimumDelay` and doubles after each failed attempt up
/// to `maximumDelay`; after `maximumAttempts` failed attempts in a row (nil = never) the transport gives up.
///
/// An agent's configuration uses `fastResume` unless it says otherwise: 0.1 s to 0.3 s bring an agent back within a
/// third of a second of its broker, after an outage of any length, while an attempt costs one refused TCP connect; the
/// jitter keeps the agents of a site from reconnecting in lockstep. The library's own default stays 1 s to 30 s, for
/// clients that come and go (a test suite's hundreds of short-lived connections would otherwise hammer its brokers).
public struct MQTTReconnectPolicy: Sendable, Equatable {
    public var minimumDelay: Duration
    public var maximumDelay: Duration
    public var maximumAttempts: Int?

    /// The agent configuration's default.
    public static let fastResume = MQTTReconnectPolicy(
        minimumDelay: .milliseconds(100), maximumDelay: .milliseconds(300))

    public init(
        minimumDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(30), maximumAttempts: Int? = nil
    ) {
        self.minimumDelay = minimumDelay
        self.maximumDelay = maximumDelay
        self.maximumAttempts = maximumAttempts
    }

    /// The longest delay before attempt `attempt` (1-based).
    package func ceiling(beforeAttempt attempt: Int) -> Duration {
        var ceiling = minimumDelay
        var remaining = max(0, attempt - 1)
        while remaining > 0 && ceiling < maximumDelay {
            ceiling *= 2
            remaining -= 1
        }
        return max(minimumDelay, min(ceiling, maximumDelay))
    }

    /// The delay before attempt `attempt` (1-based): drawn from `minimumDelay...ceiling(beforeAttempt:)`.
    package func delay(beforeAttempt attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let lowest = minimumDelay / .nanoseconds(1)
        let highest = ceiling(beforeAttempt: attempt) / .nanoseconds(1)
        guard highest > lowest else { return minimumDelay }
        return .nanoseconds(Int64.random(in: Int64(lowest)...Int64(highest), using: &generator))
    }

    package func delay(beforeAttempt attempt: Int) -> Duration {
        var generator = SystemRandomNumberGenerator()
        return delay(beforeAttempt: attempt, using: &generator)
    }
}

public enum MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    case notConnected
    case invalidTopic(String)
    case payloadTooLarge(Int)
    case tls(String)
    case library(code: Int32, message: String)

    public var description: String {
        switch self {
        case .notConnected: "not connected to the broker"
        case .invalidTopic(let topic): "invalid MQTT topic \"\(topic)\""
        case .payloadTooLarge(let size): "payload of \(size) bytes is too large"
        case .tls(let message): "TLS: \(message)"
        case .library(let code, let message): "libmosquitto error \(code): \(message)"
        }
    }
}
