import CoatyModel
import CoatyMQTT
import Synchronization

/// A broker in memory, for unit tests of protocol logic: MQTT wildcard routing, retained messages, wills,
/// per-publisher order, and outages. Never the only test of a feature; the integration tests use a real mosquitto.
public final class InMemoryBroker: Sendable {
    struct Client {
        var transport: InMemoryTransport
        var handler: @Sendable (MQTTMessage) -> Void
        var filters: [String] = []
        var will: MQTTMessage?
    }

    private struct State {
        var isUp = true
        var clients: [ObjectIdentifier: Client] = [:]
        var waiting: [InMemoryTransport] = []
        /// Every message published, in broker order.
        var log: [MQTTMessage] = []
        var retained: [String: MQTTMessage] = [:]
    }

    private final class Shared: Sendable {
        let state = Mutex(State())
    }

    private let shared = Shared()
    /// Messages in broker order, for every matching client or (retained messages on subscribe) for one.
    private let inbox: AsyncStream<(message: MQTTMessage, recipient: ObjectIdentifier?)>.Continuation
    private let delivery: Task<Void, Never>

    public init() {
        let (stream, continuation) = AsyncStream.makeStream(
            of: (message: MQTTMessage, recipient: ObjectIdentifier?).self)
        inbox = continuation
        let shared = self.shared
        delivery = Task {
            for await (message, recipient) in stream {
                let handlers = shared.state.withLock { state in
                    state.clients.filter { id, client in
                        recipient.map { $0 == id }
                            ?? client.filters.contains { CoatyName.topic(message.topic, matches: $0) }
                    }.map(\.value.handler)
                }
                for handler in handlers { handler(message) }
            }
        }
    }

    deinit {
        inbox.finish()
        delivery.cancel()
    }

    public func makeTransport() -> InMemoryTransport {
        InMemoryTransport(broker: self)
    }

    /// Every message the broker received so far, in order.
    public var publishedMessages: [MQTTMessage] { shared.state.withLock { $0.log } }

    public var connectedClientCount: Int { shared.state.withLock { $0.clients.count } }

    /// Takes the broker down (clients lose their connection; their wills go out) or brings it back up
    /// (waiting clients connect).
    public func setUp(_ isUp: Bool) {
        let (dropped, resumed) = shared.state.withLock { state -> ([Client], [InMemoryTransport]) in
            state.isUp = isUp
            if isUp {
                defer { state.waiting = [] }
                return ([], state.waiting)
            }
            let dropped = Array(state.clients.values)
            state.clients = [:]
            state.waiting += dropped.map(\.transport)
            return (dropped, [])
        }
        for client in dropped {
            if let will = client.will { route(will) }
            client.transport.lost()
        }
        for transport in resumed { transport.retry() }
    }

    func route(_ message: MQTTMessage) {
        shared.state.withLock { state in
            state.log.append(message)
            if message.retain {
                state.retained[message.topic] = message.payload.isEmpty ? nil : message
            }
        }
        inbox.yield((message, nil))
    }

    /// Queues for a new subscriber the retained messages its filter matches.
    func deliverRetained(to transport: InMemoryTransport, filter: String) {
        let messages = shared.state.withLock {
            $0.retained.values.filter { CoatyName.topic($0.topic, matches: filter) }
        }
        for message in messages { inbox.yield((message, ObjectIdentifier(transport))) }
    }

    func connect(_ transport: InMemoryTransport, will: MQTTMessage?, handler: @escaping @Sendable (MQTTMessage) -> Void)
        -> Bool
    {
        shared.state.withLock { state in
            guard state.isUp else {
                state.waiting.append(transport)
                return false
            }
            state.clients[ObjectIdentifier(transport)] = Client(transport: transport, handler: handler, will: will)
            return true
        }
    }

    func update(_ transport: InMemoryTransport, _ change: (inout [String]) -> Void) -> Bool {
        shared.state.withLock { state in
            guard var client = state.clients[ObjectIdentifier(transport)] else { return false }
            change(&client.filters)
            state.clients[ObjectIdentifier(transport)] = client
            return true
        }
    }

    func disconnect(_ transport: InMemoryTransport, publishingWill: Bool) {
        let client = shared.state.withLock { state in
            state.waiting.removeAll { $0 === transport }
            return state.clients.removeValue(forKey: ObjectIdentifier(transport))
        }
        if publishingWill, let will = client?.will { route(will) }
    }
}

public final class InMemoryTransport: MQTTTransport, Sendable {
    private let broker: InMemoryBroker
    private let events: AsyncStream<MQTTConnectionEvent>.Continuation
    public let connectionEvents: AsyncStream<MQTTConnectionEvent>
    private let connection = Mutex<(options: MQTTConnectOptions, handler: @Sendable (MQTTMessage) -> Void)?>(nil)

    init(broker: InMemoryBroker) {
        self.broker = broker
        (connectionEvents, events) = AsyncStream.makeStream(of: MQTTConnectionEvent.self)
    }

    public func connect(
        _ options: MQTTConnectOptions, executor: ConnectionExecutor?,
        onMessage handler: @escaping @Sendable (MQTTInbound) -> Void
    ) {
        let limit = options.maximumInboundPayload
        let deliver: @Sendable (MQTTMessage) -> Void = { message in
            handler(
                message.payload.count > limit
                    ? .oversized(topic: message.topic, size: message.payload.count) : .message(message))
        }
        connection.withLock { $0 = (options, deliver) }
        retry()
    }

    func retry() {
        guard let (options, handler) = connection.withLock({ $0 }) else { return }
        if broker.connect(self, will: options.will, handler: handler) {
            events.yield(.connected)
        } else {
            events.yield(.connectionLost(reason: "broker down"))
            events.yield(.reconnecting(attempt: 1, delay: options.reconnect.minimumDelay))
        }
    }

    func lost() {
        events.yield(.connectionLost(reason: "broker down"))
        events.yield(.reconnecting(attempt: 1, delay: .seconds(1)))
    }

    public func publish(_ message: MQTTMessage) throws(MQTTError) {
        guard broker.update(self, { _ in }) else { throw .notConnected }
        broker.route(message)
    }

    public func subscribe(_ topicFilter: String) throws(MQTTError) {
        guard broker.update(self, { if !$0.contains(topicFilter) { $0.append(topicFilter) } }) else {
            throw .notConnected
        }
        broker.deliverRetained(to: self, filter: topicFilter)
    }

    public func unsubscribe(_ topicFilter: String) throws(MQTTError) {
        guard broker.update(self, { $0.removeAll { $0 == topicFilter } }) else { throw .notConnected }
    }

    public func disconnect(_ mode: MQTTDisconnectMode) async {
        broker.disconnect(self, publishingWill: mode == .abrupt)
        connection.withLock { $0 = nil }
        events.yield(.disconnected)
        events.finish()
    }
}
